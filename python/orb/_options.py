"""Task and actor options as Ray spells them, checked and turned into what orb._core
takes. A misspelt or mistyped option is a clear error where `.options()` is called."""
import json

TASK_OPTIONS = {"num_cpus", "num_gpus", "resources", "memory", "max_retries", "retry_exceptions", "name",
                "scheduling_strategy", "placement_group", "placement_group_bundle_index", "label_selector",
                "runtime_env", "num_returns", "memory_growth", "max_memory", "_generator_backpressure_num_objects"}
ACTOR_OPTIONS = {"num_cpus", "num_gpus", "resources", "memory", "name", "namespace", "lifetime", "max_restarts",
                 "max_task_retries", "max_concurrency", "scheduling_strategy", "placement_group",
                 "placement_group_bundle_index", "label_selector", "runtime_env", "get_if_exists"}
METHOD_OPTIONS = {"name", "num_returns", "_generator_backpressure_num_objects"}
STREAMING = "streaming"  # num_returns of a generator whose items stream to the caller

LANGUAGE_PYTHON = 1
MAX_NUM_RETURNS = 1 << 16  # the core's bound (task_options_check.h)


def check(options, allowed, what):
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError("invalid option%s for %s: %s (valid: %s)" % (
            "s" if len(unknown) > 1 else "", what, ", ".join(unknown), ", ".join(sorted(allowed))))


def _number(options, key, minimum=0):
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ValueError("%s must be a number >= %s, not %r" % (key, minimum, value))
    return float(value)


def _int(options, key, minimum):
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be an integer >= %d, not %r" % (key, minimum, value))
    return value


def _label_selector(selector):
    """Ray's dict form ({"zone": "a", "tier": "!spot", "gpu": "in(a100,h100)"}) as orb's
    selector text ("zone=a, tier!=spot, gpu in (a100,h100)")."""
    if isinstance(selector, str):
        return selector
    if not isinstance(selector, dict):
        raise ValueError("label_selector must be a dict of label to value, not %r" % (selector,))
    terms = []
    for key, value in selector.items():
        value = str(value).strip()
        if value.startswith("!in(") and value.endswith(")"):
            terms.append("%s notin (%s)" % (key, value[4:-1]))
        elif value.startswith("in(") and value.endswith(")"):
            terms.append("%s in (%s)" % (key, value[3:-1]))
        elif value.startswith("!"):
            terms.append("%s!=%s" % (key, value[1:]))
        else:
            terms.append("%s=%s" % (key, value))
    return ", ".join(terms)


def _placement(options, out):
    """The scheduling strategy and placement group options into `out`."""
    from orb.util import scheduling_strategies as ss
    from orb.util.placement_group import PlacementGroup
    strategy = options.get("scheduling_strategy")
    if strategy is None or strategy == "DEFAULT":
        pass
    elif strategy == "SPREAD":
        out["strategy"] = 1
    elif isinstance(strategy, ss.NodeAffinitySchedulingStrategy):
        out["strategy"] = 2
        out["affinity_node_id"] = strategy.node_id
        out["affinity_soft"] = bool(strategy.soft)
    elif isinstance(strategy, ss.PlacementGroupSchedulingStrategy):
        out["placement_group_id"] = strategy.placement_group.id.hex()
        out["bundle_index"] = int(strategy.placement_group_bundle_index)
    else:
        raise ValueError("scheduling_strategy must be \"DEFAULT\", \"SPREAD\", NodeAffinitySchedulingStrategy or "
                         "PlacementGroupSchedulingStrategy, not %r" % (strategy,))
    group = options.get("placement_group")
    if group is not None and group != "default":
        if not isinstance(group, PlacementGroup):
            raise ValueError("placement_group must be a PlacementGroup, not %r" % (group,))
        out["placement_group_id"] = group.id.hex()
        out["bundle_index"] = int(options.get("placement_group_bundle_index", -1))
    if options.get("label_selector"):
        out["label_selector"] = _label_selector(options["label_selector"])


def _resources(options, default_cpus):
    resources = {}
    if options.get("resources") is not None:
        if not isinstance(options["resources"], dict):
            raise ValueError("resources must be a dict of name to amount, not %r" % (options["resources"],))
        for name, amount in options["resources"].items():
            if name in ("CPU", "GPU"):
                raise ValueError("use num_cpus / num_gpus, not resources[%r]" % name)
            resources[str(name)] = _number({name: amount}, name)
    for key, name in (("num_cpus", "CPU"), ("num_gpus", "GPU"), ("memory", "memory")):
        if options.get(key) is not None:
            resources[name] = _number(options, key)
    if "CPU" not in resources and default_cpus:
        resources["CPU"] = float(default_cpus)
    return resources


def task_options(options):
    """TaskOptionsData's fields for a remote function's options."""
    out = {"language": LANGUAGE_PYTHON, "resources": _resources(options, default_cpus=1)}
    if options.get("max_retries") is not None:
        out["max_retries"] = _int(options, "max_retries", -1)
    if options.get("name"):
        out["name"] = str(options["name"])
    for key in ("memory_growth", "max_memory"):
        if options.get(key) is not None:
            out[key] = _number(options, key)
    if out.get("memory_growth", 0) not in (0, 0.0) and out["memory_growth"] <= 1:
        raise ValueError("memory_growth must be more than 1 (or 0: off), not %r" % options["memory_growth"])
    out.update(returns_options(options))
    if options.get("runtime_env"):
        out["runtime_env"] = _runtime_env(options["runtime_env"])
    _placement(options, out)
    return out


def num_returns(options):
    """The num_returns option, checked: how many refs `.remote()` returns (0: none, and
    `.remote()` returns None, as Ray's), or STREAMING (an ObjectRefGenerator)."""
    value = options.get("num_returns", 1)
    if value is None:
        return 1
    if value == STREAMING:
        return value
    if value == "dynamic":
        raise ValueError("num_returns=\"dynamic\" is not supported (Ray deprecates it): use num_returns=\"streaming\"")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("num_returns must be a non-negative integer, not %r" % (value,))
    if value > MAX_NUM_RETURNS:
        raise ValueError("num_returns must be at most %d, not %d" % (MAX_NUM_RETURNS, value))
    return value


def returns_options(options):
    """TaskOptionsData's num_returns, streaming and generator_backpressure fields."""
    count = num_returns(options)
    bound = options.get("_generator_backpressure_num_objects")
    if bound is not None and bound != -1:
        bound = _int(options, "_generator_backpressure_num_objects", 1)
    if count != STREAMING:
        return {"num_returns": max(1, count)}
    return {"num_returns": 1, "streaming": True, "generator_backpressure": 0 if bound in (None, -1) else bound}


def actor_options(options):
    """ActorOptionsData's fields for an actor class's options."""
    out = {"language": LANGUAGE_PYTHON, "resources": _resources(options, default_cpus=0)}
    if options.get("name"):
        out["name"] = str(options["name"])
    if options.get("namespace"):
        out["namespace"] = str(options["namespace"])
    lifetime = options.get("lifetime")
    if lifetime is not None:
        if lifetime not in ("detached", "non_detached"):
            raise ValueError("lifetime must be \"detached\", \"non_detached\" or None, not %r" % (lifetime,))
        out["detached"] = lifetime == "detached"
    for key, minimum in (("max_restarts", -1), ("max_task_retries", -1), ("max_concurrency", 1)):
        if options.get(key) is not None:
            out[key] = _int(options, key, minimum)
    if options.get("runtime_env"):
        out["runtime_env"] = _runtime_env(options["runtime_env"])
    _placement(options, out)
    return out


def _runtime_env(env):
    if not isinstance(env, dict):
        raise ValueError("runtime_env must be a dict, not %r" % (env,))
    return json.dumps(env, sort_keys=True)
