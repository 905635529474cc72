"""Task and actor options as Ray spells them, checked and turned into what orb._core
takes. A misspelt or mistyped option is a clear error where `.options()` is called."""
import functools
import json
import warnings

TASK_OPTIONS = {"num_cpus", "num_gpus", "resources", "memory", "max_retries", "retry_exceptions", "name",
                "scheduling_strategy", "placement_group", "placement_group_bundle_index", "label_selector",
                "runtime_env", "num_returns", "memory_growth", "max_memory", "_generator_backpressure_num_objects",
                "placement_group_capture_child_tasks", "max_calls"}
ACTOR_OPTIONS = {"num_cpus", "num_gpus", "resources", "memory", "name", "namespace", "lifetime", "max_restarts",
                 "max_task_retries", "max_concurrency", "scheduling_strategy", "placement_group",
                 "placement_group_bundle_index", "label_selector", "runtime_env", "get_if_exists",
                 "concurrency_groups", "placement_group_capture_child_tasks",
                 "_actor_generator_backpressure_num_objects", "object_store_memory"}
METHOD_OPTIONS = {"name", "num_returns", "_generator_backpressure_num_objects", "concurrency_group"}
STREAMING = "streaming"  # num_returns of a generator whose items stream to the caller
DYNAMIC = "dynamic"  # num_returns of a generator whose one result holds all its items' refs

LANGUAGE_PYTHON = 1
# The core's scheduling strategies (TaskOptionsData::strategy, kStrategy* in C++).
STRATEGY_SPREAD = 1
STRATEGY_NODE_AFFINITY = 2
UNLIMITED_RETRIES = (1 << 31) - 1  # max_retries=-1
MAX_NUM_RETURNS = 1 << 16  # the core's bound (task_options_check.h)


_NUMBER = (int, float)
_COUNT = (int,)


@functools.lru_cache(maxsize=None)
def _types():
    """The types each option takes (None is always accepted: the default), as Ray's.
    Built once: check() runs at every .options()."""
    from orb.util.placement_group import PlacementGroup
    from orb.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy
    return {
        "num_cpus": _NUMBER, "num_gpus": _NUMBER, "memory": _NUMBER, "memory_growth": _NUMBER,
        "max_memory": _NUMBER, "resources": (dict,), "runtime_env": (dict,), "name": (str,), "namespace": (str,),
        "lifetime": (str,), "max_restarts": _COUNT, "max_task_retries": _COUNT, "max_retries": _COUNT,
        "max_concurrency": _COUNT, "placement_group_bundle_index": _COUNT, "max_calls": _COUNT,
        "_generator_backpressure_num_objects": _COUNT, "_actor_generator_backpressure_num_objects": _COUNT,
        "num_returns": (int, str),
        "scheduling_strategy": (str, PlacementGroupSchedulingStrategy, NodeAffinitySchedulingStrategy),
        "placement_group": (str, PlacementGroup), "placement_group_capture_child_tasks": (bool,),
        "get_if_exists": (bool,), "concurrency_groups": (dict, list), "concurrency_group": (str,),
        "label_selector": (dict, str), "retry_exceptions": (bool, list, tuple), "object_store_memory": _NUMBER,
    }


def check(options, allowed, what):
    """Unknown options are a ValueError, options of the wrong type a TypeError naming the
    keyword (as Ray's); their values are checked where they are used."""
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError("invalid option%s for %s: %s (valid: %s)" % (
            "s" if len(unknown) > 1 else "", what, ", ".join(unknown), ", ".join(sorted(allowed))))
    types = _types()
    for key, value in options.items():
        expected = types.get(key)
        if value is None or expected is None:
            continue
        # A bool is an int to Python, but not a number or a count to Ray's users.
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            raise TypeError("the type of option %r of %s must be %s, not %s" % (
                key, what, " or ".join(t.__name__ for t in expected), type(value).__name__))
    placement_group = options.get("placement_group")
    if placement_group not in (None, "default") and options.get("scheduling_strategy") is not None:
        raise ValueError("%s: give a placement group with scheduling_strategy=PlacementGroupSchedulingStrategy(...) "
                         "or with placement_group=, not both" % what)


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
        out["strategy"] = STRATEGY_SPREAD
    elif isinstance(strategy, ss.NodeAffinitySchedulingStrategy):
        out["strategy"] = STRATEGY_NODE_AFFINITY
        out["affinity_node_id"] = strategy.node_id
        out["affinity_soft"] = bool(strategy.soft)
    elif isinstance(strategy, ss.PlacementGroupSchedulingStrategy):
        if strategy.placement_group is None:  # Ray's way to leave a capturing parent's group
            out["leave_captured_group"] = True
            return _labels(options, out)
        out["placement_group_id"] = strategy.placement_group.id.hex()
        out["bundle_index"] = int(strategy.placement_group_bundle_index)
        out["capture_child_tasks"] = bool(strategy.placement_group_capture_child_tasks)
    else:
        raise ValueError("scheduling_strategy must be \"DEFAULT\", \"SPREAD\", NodeAffinitySchedulingStrategy or "
                         "PlacementGroupSchedulingStrategy, not %r" % (strategy,))
    group = options.get("placement_group")
    if group is not None and group != "default":
        if not isinstance(group, PlacementGroup):
            raise ValueError("placement_group must be a PlacementGroup, not %r" % (group,))
        out["placement_group_id"] = group.id.hex()
        out["bundle_index"] = int(options.get("placement_group_bundle_index", -1))
        out["capture_child_tasks"] = bool(options.get("placement_group_capture_child_tasks"))
    _labels(options, out)


def _labels(options, out):
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
            if isinstance(amount, bool) or not isinstance(amount, (int, float)):
                raise TypeError("resources[%r] must be a number, not %s" % (name, type(amount).__name__))
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
        if out["max_retries"] == -1:  # Ray's "without limit"
            out["max_retries"] = UNLIMITED_RETRIES
    out.update(_retry_exceptions(options.get("retry_exceptions")))
    if options.get("max_calls") is not None:  # a worker ends after this many calls of it (0: no limit)
        out["max_calls"] = _int(options, "max_calls", 0)
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
    if value == DYNAMIC:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("num_returns must be a non-negative integer, not %r" % (value,))
    if value > MAX_NUM_RETURNS:
        raise ValueError("num_returns must be at most %d, not %d" % (MAX_NUM_RETURNS, value))
    return value


def backpressure(options):
    """The _generator_backpressure_num_objects option, checked: a bound >= 1 on a stream's
    unconsumed items, or None (-1 or unset: no bound)."""
    bound = options.get("_generator_backpressure_num_objects")
    if bound is None or bound == -1:
        return None
    if bound == 0:
        raise ValueError("_generator_backpressure_num_objects=0 is not allowed: give a bound >= 1, or -1 for none "
                         "(as Ray)")
    return _int(options, "_generator_backpressure_num_objects", 1)


def returns_options(options):
    """TaskOptionsData's num_returns, streaming and generator_backpressure fields."""
    count = num_returns(options)
    bound = backpressure(options)
    if count == DYNAMIC:
        return {"num_returns": 1}
    if count != STREAMING:
        return {"num_returns": max(1, count)}
    return {"num_returns": 1, "streaming": True, "generator_backpressure": bound or 0}


def deprecated_object_store_memory(what):
    """Ray's warning for `object_store_memory` on actors or bundles (`what`), which
    reserves nothing: it is accepted and dropped."""
    warnings.warn("Setting 'object_store_memory' for %s is deprecated since it doesn't actually reserve the "
                  "required object store memory. Objects beyond the store's capacity are spilled to disk "
                  "instead: leave it out." % what, DeprecationWarning, stacklevel=4)


def actor_options(options):
    """ActorOptionsData's fields for an actor class's options."""
    if options.get("object_store_memory") is not None:
        deprecated_object_store_memory("actors")
    if not options.get("max_restarts") and options.get("max_task_retries"):
        raise ValueError("max_task_retries cannot be set without max_restarts: calls are retried only when the "
                         "actor restarts")
    if options.get("name") == "":  # as Ray's
        raise ValueError("Actor name cannot be an empty string: leave name out for an actor without one")
    if options.get("namespace") == "":
        raise ValueError("an actor's namespace cannot be an empty string: leave namespace out for the job's")
    if options.get("get_if_exists") and not options.get("name"):
        raise ValueError("get_if_exists needs the actor's name")
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
    if options.get("concurrency_groups"):
        out["concurrency_groups"] = concurrency_groups(options)
    if options.get("runtime_env"):
        out["runtime_env"] = _runtime_env(options["runtime_env"])
    _placement(options, out)
    return out


def _runtime_env(env):
    if not isinstance(env, dict):
        raise ValueError("runtime_env must be a dict, not %r" % (env,))
    return runtime_env_json(env)


def runtime_env_json(env):
    """A runtime_env as the core takes it (JSON). Ray's `py_modules` — packages given as
    modules or local paths — become directories on the workers' module path (the core's
    code_search_path): orb does not upload them, so the nodes must see the same paths."""
    env = dict(env)
    modules = env.pop("py_modules", None)
    if modules:
        if not isinstance(modules, (list, tuple)):
            raise TypeError("runtime_env py_modules must be a list of modules or local paths, not %r" % (modules,))
        paths = env.get("code_search_path") or []
        paths = [paths] if isinstance(paths, str) else list(paths)
        env["code_search_path"] = paths + [_module_search_path(m) for m in modules]
    return json.dumps(env, sort_keys=True)


def _module_search_path(module):
    """Where a worker finds a py_modules entry: the directory above a package (a module
    object or a package directory), or a .zip/.whl archive itself."""
    import os
    import types
    if isinstance(module, types.ModuleType):
        where = getattr(module, "__path__", None)
        if where:  # a package: the directory that holds it
            return os.path.dirname(os.path.abspath(list(where)[0]))
        if not getattr(module, "__file__", None):
            raise ValueError("runtime_env py_modules: module %r has no file to find it by" % module.__name__)
        return os.path.dirname(os.path.abspath(module.__file__))
    if not isinstance(module, (str, os.PathLike)):
        raise TypeError("runtime_env py_modules entries are modules or local paths, not %r" % (module,))
    path = os.fspath(module)
    if "://" in path:
        raise ValueError("runtime_env py_modules: %s is a URI; orb does not fetch packages, give a path the "
                         "nodes see" % path)
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return os.path.dirname(path.rstrip(os.sep))
    if os.path.isfile(path) and path.endswith((".zip", ".whl")):
        return path
    raise ValueError("runtime_env py_modules: %s is neither a package directory nor a .zip or .whl archive"
                     % path)


def concurrency_groups(options):
    """The concurrency_groups option, checked: {name: calls run at once}."""
    groups = options.get("concurrency_groups") or {}
    if not isinstance(groups, dict):
        raise TypeError("concurrency_groups must be a dict of group name to max concurrency, not %r" % (groups,))
    out = {}
    for name, size in groups.items():
        if not isinstance(name, str) or not name:
            raise ValueError("a concurrency group's name must be a non-empty string, not %r" % (name,))
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError("concurrency group %r must run at least 1 call at once, not %r" % (name, size))
        out[name] = size
    return out


def concurrency_group(options, groups, method):
    """The concurrency_group of a call, checked against the actor's `groups` (None: not
    known here, the worker checks)."""
    group = options.get("concurrency_group")
    if group is None:
        return ""
    if not isinstance(group, str):
        raise TypeError("concurrency_group must be a string, not %r" % (group,))
    if groups is not None and group and group not in groups:
        raise ValueError("%s: the actor has no concurrency group %r (its groups: %s)" % (
            method, group, ", ".join(sorted(groups)) or "none"))
    return group


def _retry_exceptions(value):
    """retry_exceptions (True, or a list of exception classes: only those) as the core's
    options; the allowlist travels pickled and the worker checks a raised error against it."""
    if not value:
        return {}
    if value is True:
        return {"retry_exceptions": True}
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in value):
        raise ValueError("retry_exceptions must be a bool or a list of exception classes, not %r" % (value,))
    import cloudpickle
    return {"retry_exceptions": True, "retry_exception_allowlist": cloudpickle.dumps(tuple(value))}
