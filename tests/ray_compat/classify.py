"""The mechanical out-of-scope rule, applied the same way to every Ray test file.

A test is OUT OF SCOPE when its own source (decorators included), a helper function of
its file that it calls, or a fixture it requests references:
  ray._private / ray._common (except the helpers the shim provides), ray._raylet,
  ray.experimental, ray.data, ray.serve, ray.train, ray.tune, ray.dashboard,
  ray.util.state, ray.cluster_utils, ray.util.client, a name the file imports from one
  of those modules, local_mode, monkeypatch.setenv("RAY_..."), GPUs (num_gpus, "GPU",
  get_gpu_ids), Windows/mac-only markers (sys.platform != "win32"/"darwin");
or when it requests a Ray fixture: ray_start_cluster*, ray_start_cluster_head*,
  ray_start_client_server*, call_ray_start*, ray_start_shared_local_modes (local_mode),
  or any other Ray conftest fixture that the shim's conftest does not provide
  (those are Ray-internal: error_pubsub, start_http_proxy, ...).
Everything else is IN SCOPE.

    python3 classify.py FILE...   -> JSON {file: {test_name: [reasons]}} (empty list: in scope)
"""
import ast
import json
import re
import sys

HELPERS = {"wait_for_condition", "SignalActor", "Semaphore", "run_string_as_driver",
           "run_string_as_driver_nonblocking", "client_test_enabled", "client_mode_should_convert",
           "wait_for_pid_to_exit"}
_H = "|".join(sorted(HELPERS))
INTERNAL_MODULE = re.compile(r"^ray\.(_private|_common|_raylet|experimental|data|serve|train|tune|dashboard|"
                             r"util\.state|cluster_utils|util\.client|tests|autoscaler|worker|state|"
                             r"ray_constants)(\.|$)|^ray\.test_utils$|^ray(\.\w+)*\._private(\.|$)")
# Ray-internal modules imported by name from the top package (`from ray import ray_constants`).
INTERNAL_TOP = {"_private", "_common", "_raylet", "experimental", "cluster_utils", "ray_constants", "worker",
                "state", "autoscaler", "serialization"}
PATTERNS = [
    (re.compile(r"\bray\.(_private|_common)\b(?!\.test_utils\.(%s)\b)" % _H), "ray._private/_common internals"),
    (re.compile(r"\bray\.test_utils\b(?!\.(%s)\b)" % _H), "ray._private/_common internals"),
    (re.compile(r"\bray\.[\w.]*\._private\b|\bray\.(worker|ray_constants|state)\b"),
     "ray._private/_common internals"),
    (re.compile(r"\bray\._raylet\b"), "ray._raylet"),
    (re.compile(r"\bray\.experimental\b"), "ray.experimental"),
    (re.compile(r"\bray\.(data|serve|train|tune|dashboard)\b"), "ray.data/serve/train/tune/dashboard"),
    (re.compile(r"\bray\.util\.state\b"), "ray.util.state"),
    (re.compile(r"\bray\.cluster_utils\b|\bray\.tests\.cluster_utils\b"), "ray.cluster_utils"),
    (re.compile(r"\bray\.util\.client\b"), "client mode"),
    (re.compile(r"\blocal_mode\b"), "local_mode"),
    (re.compile(r"setenv\(\s*[\"']RAY_"), "monkeypatch of RAY_* env var"),
    (re.compile(r"\bnum_gpus\b|[\"']GPU[\"']|\bget_gpu_ids\b"), "GPU"),
    (re.compile(r"sys\.platform\s*!=\s*[\"'](win32|darwin)[\"']|sys\.platform\s+not\s+in"), "Windows/mac-only"),
]
RAY_FIXTURE = re.compile(r"^(ray_start_cluster\w*|ray_start_cluster_head\w*|ray_start_client_server\w*|"
                         r"call_ray_start\w*|ray_start_shared_local_modes)$")
# What tests may request besides Ray's fixtures: pytest's and the shim conftest's.
PROVIDED = {"request", "monkeypatch", "tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory", "capsys",
            "capfd", "capsysbinary", "capfdbinary", "caplog", "recwarn", "pytestconfig", "record_property",
            "event_loop", "shutdown_only", "ray_start_regular", "ray_start_regular_shared",
            "ray_start_regular_shared_2_cpus", "ray_start_1_cpu", "ray_start_2_cpus", "ray_start_4_cpus",
            "ray_start_10_cpus", "ray_start_regular_2_cpus"}


def _segment(lines, node):
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return "\n".join(lines[start - 1:node.end_lineno])


def _is_fixture(node):
    for d in node.decorator_list:
        text = ast.unparse(d)
        if text.startswith("pytest.fixture") or text.startswith("fixture"):
            return True
    return False


def _param_names(node):
    """Plain parametrize arguments (not indirect ones: those are fixtures)."""
    names = set()
    for d in node.decorator_list:
        if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize") and d.args:
            first = d.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                these = {n.strip() for n in first.value.split(",") if n.strip()}
            elif isinstance(first, (ast.List, ast.Tuple)):
                these = {e.value for e in first.elts if isinstance(e, ast.Constant)}
            else:
                these = set()
            for kw in d.keywords:
                if kw.arg == "indirect":
                    if isinstance(kw.value, ast.Constant) and kw.value.value is True:
                        these = set()
                    elif isinstance(kw.value, (ast.List, ast.Tuple)):
                        these -= {e.value for e in kw.value.elts if isinstance(e, ast.Constant)}
            names |= these
    return names


def _args(node):
    a = node.args
    return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]


def classify_file(path):
    text = open(path, encoding="utf-8").read()
    lines = text.splitlines()
    tree = ast.parse(text)
    foreign = {}  # name -> module it came from (Ray-internal)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and INTERNAL_MODULE.match(node.module):
            for alias in node.names:
                name = alias.asname or alias.name
                if alias.name not in HELPERS:
                    foreign[name] = node.module
        elif isinstance(node, ast.ImportFrom) and node.module == "ray":
            for alias in node.names:
                if alias.name in INTERNAL_TOP:
                    foreign[alias.asname or alias.name] = "ray"
    functions, fixtures, tests = {}, {}, []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test"):
                tests.append((node.name, node, None))
            elif _is_fixture(node):
                fixtures[node.name] = node
            else:
                functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            if node.name.startswith("Test"):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                        tests.append(("%s::%s" % (node.name, sub.name), sub, node))
                    elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_fixture(sub):
                        fixtures[sub.name] = sub
            else:
                functions[node.name] = node

    def reasons_of_source(src):
        found = [why for rx, why in PATTERNS if rx.search(src)]
        for name, module in foreign.items():
            if re.search(r"(?<![\w.])%s\b" % re.escape(name), src):
                found.append("uses %s from %s" % (name, module))
        return found

    # Helper functions (module level) that are internal taint their callers; iterate to a fixpoint.
    tainted = {}
    changed = True
    while changed:
        changed = False
        for name, node in functions.items():
            if name in tainted:
                continue
            src = _segment(lines, node)
            why = reasons_of_source(src)
            why += ["calls %s (%s)" % (n, tainted[n][0]) for n in tainted if re.search(r"\b%s\(" % re.escape(n), src)]
            if why:
                tainted[name] = why
                changed = True

    def fixture_reasons(name, seen):
        if name in seen:
            return []
        seen.add(name)
        if RAY_FIXTURE.match(name):
            return ["Ray fixture %s" % name]
        if name in fixtures:
            node = fixtures[name]
            why = reasons_of_source(_segment(lines, node))
            for arg in _args(node):
                why += fixture_reasons(arg, seen)
            return why
        if name in PROVIDED:
            return []
        return ["Ray fixture not emulated: %s" % name]

    result = {}
    for test_name, node, cls in tests:
        src = _segment(lines, node)
        if cls is not None:
            src = "\n".join(ast.unparse(d) for d in cls.decorator_list) + "\n" + src
        why = reasons_of_source(src)
        why += ["calls %s (%s)" % (n, tainted[n][0]) for n in tainted if re.search(r"\b%s\(" % re.escape(n), src)]
        params = _param_names(node)
        for arg in _args(node):
            if arg in params and not RAY_FIXTURE.match(arg) and arg not in fixtures and arg not in PROVIDED:
                continue  # a plain parametrize argument
            why += fixture_reasons(arg, set())
        result[test_name] = sorted(set(why))
    return result


if __name__ == "__main__":
    print(json.dumps({p: classify_file(p) for p in sys.argv[1:]}, indent=1))
