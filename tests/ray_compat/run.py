"""Runs Ray's own tests against orb through the `ray` shim, bounded, and summarizes.

    python3 run.py SRC WORKDIR [--files a.py,b.py] [--deadline HH:MM]   (see run.sh)

SRC: a Ray git dir (read with `git --git-dir=SRC show HEAD:python/ray/tests/NAME`) or a
directory of Ray test files. Steps: copy the in-scope FILES to WORKDIR/tests, rewrite
them mechanically (the shim package is itself named `ray`, so `ray` names stay; Ray's
`ray.tests.conftest` imports point at the shim's conftest), collect, classify
(classify.py), run the in-scope tests file by file (each file under 600 s in all, each
test phase under the conftest's alarm; a process that dies or is killed is resumed
after the test it was in, which counts as hung), kill what each run left behind (by an
environment tag only our runs carry), and write WORKDIR/summary.json and summary.md.
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
# The orb to measure: a build directory (bin/ and python/), this checkout's by default.
DEFAULT_BUILD = os.path.join(HERE, "..", "..", "build")
sys.path.insert(0, HERE)
import classify  # noqa: E402

PATTERNS = ["test_basic.py", "test_basic_[0-9].py", "test_actor.py", "test_actor_advanced.py", "test_asyncio.py",
            "test_cancel.py", "test_wait.py", "test_placement_group.py", "test_get_or_create_actor.py",
            "test_actor_pool.py", "test_streaming_generator*.py", "test_generators.py"]
FILE_BUDGET = 600
# In scope, but not run: what they would do to this shared machine.
SAFETY_SKIP = {
    "test_generators.py::test_generator_oom": "allocates ~10 GB in one worker on purpose (Ray expects an OOM)",
}
PY = "/usr/bin/python3"


def list_sources(src):
    if os.path.isdir(os.path.join(src, "objects")) or src.endswith(".git"):
        names = subprocess.run(["git", "--git-dir", src, "ls-tree", "--name-only", "HEAD", "python/ray/tests/"],
                               capture_output=True, text=True, check=True).stdout.split()
        names = [os.path.basename(n) for n in names]
        read = lambda n: subprocess.run(["git", "--git-dir", src, "show", "HEAD:python/ray/tests/" + n],  # noqa
                                        capture_output=True, check=True).stdout
    else:
        names = os.listdir(src)
        read = lambda n: open(os.path.join(src, n), "rb").read()  # noqa
    chosen = sorted(n for n in names if any(fnmatch.fnmatch(n, p) for p in PATTERNS))
    return chosen, read


def rewrite(text):
    # The shim is a package named `ray`: Ray's `ray` names need no renaming. Ray's conftest
    # helpers are the shim conftest's.
    return re.sub(r"\bfrom ray\.tests\.conftest import\b", "from conftest import", text)


def env_for(workdir, tag, results):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.environ.get("ORB_SNAP", DEFAULT_BUILD), "python"), os.path.join(HERE, "shim"),
                                         os.path.join(workdir, "tests")])
    env.setdefault("ORB_BIN_DIR", os.path.join(os.environ.get("ORB_SNAP", DEFAULT_BUILD), "bin"))
    env.setdefault("ORB_TEST_BIN_DIR", os.path.join(os.environ.get("ORB_SNAP", DEFAULT_BUILD), "bin"))
    env["RAY_COMPAT_TAG"] = tag
    env["RAY_COMPAT_RESULTS"] = results
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("ORB_ADDRESS", None)
    return env


def kill_tagged(tag):
    """Kill every process whose environment carries our run's tag (only ours do)."""
    needle = ("RAY_COMPAT_TAG=" + tag).encode()
    killed = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if needle in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
        except (OSError, ProcessLookupError):
            pass
    return killed


def read_results(path):
    records = []
    if os.path.exists(path):
        for line in open(path):
            try:
                records.append(json.loads(line))
            except ValueError:
                pass
    return records


def collect(workdir, name, env):
    proc = subprocess.run(["timeout", "300", PY, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           name], cwd=os.path.join(workdir, "tests"), env=env, capture_output=True, text=True)
    ids = [l.strip() for l in proc.stdout.splitlines() if "::" in l and not l.startswith(" ")]
    return ids, proc.stdout[-3000:] + proc.stderr[-3000:]


def base_of(nodeid):
    parts = nodeid.split("::")[1:]
    parts[-1] = parts[-1].split("[")[0]
    return "::".join(parts)


def first_error_line(longrepr):
    lines = longrepr.splitlines()
    e_lines = [l[1:].strip() for l in lines if l.startswith("E ")]
    if e_lines:
        return e_lines[0][:300]
    for l in reversed(lines):
        if l.strip():
            return l.strip()[:300]
    return ""


def error_location(longrepr):
    locs = re.findall(r"^(\S+\.py):(\d+): (\w+)", longrepr, re.M)
    return "%s:%s: %s" % locs[-1] if locs else ""


def run_file(workdir, name, nodeids, tag, deadline):
    results = os.path.join(workdir, "results", name + ".jsonl")
    os.makedirs(os.path.dirname(results), exist_ok=True)
    if os.path.exists(results):
        os.remove(results)
    env = env_for(workdir, tag, results)
    outcome = {}   # nodeid -> dict
    hung = set()
    started_at = time.time()
    log = open(os.path.join(workdir, "results", name + ".log"), "a")
    remaining = list(nodeids)
    while remaining:
        budget = min(FILE_BUDGET - (time.time() - started_at), deadline - time.time())
        if budget < 5:
            for n in remaining:
                outcome[n] = {"outcome": "not run (budget)"}
            break
        log.write("\n=== run %d tests, budget %.0fs\n" % (len(remaining), budget))
        log.flush()
        argfile = os.path.join(workdir, "results", name + ".ids")
        with open(argfile, "w") as f:
            f.write("\n".join(remaining))
        cmd = ["timeout", "-s", "KILL", str(int(budget)), PY, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               "-rN", "--tb=short", "-o", "console_output_style=classic"] + remaining
        rc = subprocess.call(cmd, cwd=os.path.join(workdir, "tests"), env=env, stdout=log, stderr=subprocess.STDOUT)
        killed = kill_tagged(tag)
        log.write("=== pytest rc=%s, leftover processes killed: %s\n" % (rc, killed))
        log.flush()
        last_start = None
        for rec in read_results(results):
            if rec["event"] == "start":
                last_start = rec["nodeid"]
                continue
            n = rec["nodeid"]
            cur = outcome.setdefault(n, {"outcome": "passed"})
            if rec["outcome"] == "failed":
                if cur["outcome"] != "failed":  # the first failing phase is the cause
                    cur.update(outcome="failed", when=rec["when"], timeout=rec.get("timeout", False),
                               error=first_error_line(rec.get("longrepr", "")),
                               where=error_location(rec.get("longrepr", "")),
                               longrepr=rec.get("longrepr", "")[-2500:])
            elif rec["outcome"] == "skipped" and cur["outcome"] == "passed":
                cur.update(outcome="skipped", error=first_error_line(rec.get("longrepr", "")))
            if rec["when"] == "teardown" and n == last_start:
                last_start = None
        if last_start is not None:
            hung.add(last_start)
            outcome[last_start] = {"outcome": "hung", "error": "process killed or died during this test (rc=%s)" % rc}
        remaining = [n for n in nodeids if n not in outcome]
        if remaining and rc == 0:
            # pytest ended normally but did not run them (deselected by name clash...)
            for n in remaining:
                outcome[n] = {"outcome": "not run"}
            remaining = []
        if remaining and last_start is None:
            # died between tests: give up on the rest rather than loop
            for n in remaining:
                outcome[n] = {"outcome": "not run (pytest died rc=%s)" % rc}
            remaining = []
    log.close()
    return outcome


def check_snapshot():
    """The snapshot's orb/_core*.so may load liborb.so.0 through a RUNPATH into a live build
    tree: a rebuild there while we run mixes two builds (we saw "max_concurrency must be at
    least 1" and driver segfaults from that). Say which library is used, and warn when it
    is newer than the snapshot's _core."""
    import glob
    snap = os.environ.get("ORB_SNAP", DEFAULT_BUILD)
    cores = glob.glob(os.path.join(snap, "python", "orb", "_core*.so"))
    if not cores:
        return
    out = subprocess.run(["ldd", cores[0]], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "liborb" in line and "=>" in line:
            lib = line.split("=>")[1].split("(")[0].strip()
            print("orb core library: %s" % lib, flush=True)
            if os.path.exists(lib) and os.path.getmtime(lib) > os.path.getmtime(cores[0]) + 60:
                print("WARNING: %s is newer than %s: results may mix two builds" % (lib, cores[0]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("workdir")
    ap.add_argument("--files", default="")
    ap.add_argument("--deadline", default="", help="HH:MM UTC: run no test after it")
    args = ap.parse_args()
    workdir = os.path.abspath(args.workdir)
    tests_dir = os.path.join(workdir, "tests")
    os.makedirs(tests_dir, exist_ok=True)
    deadline = float("inf")
    if args.deadline:
        import datetime
        now = datetime.datetime.utcnow()
        h, m = map(int, args.deadline.split(":"))
        d = now.replace(hour=h, minute=m, second=0, microsecond=0)
        deadline = time.time() + (d - now).total_seconds()
    check_snapshot()
    names, read = list_sources(args.src)
    if args.files:
        wanted = set(args.files.split(","))
        names = [n for n in names if n in wanted]
    shutil.copy(os.path.join(HERE, "conftest.py"), os.path.join(tests_dir, "conftest.py"))
    for n in names:
        with open(os.path.join(tests_dir, n), "w", encoding="utf-8") as f:
            f.write(rewrite(read(n).decode("utf-8")))
    summary_path = os.path.join(workdir, "summary.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    tag = uuid.uuid4().hex
    for n in names:
        path = os.path.join(tests_dir, n)
        classes = classify.classify_file(path)
        env = env_for(workdir, tag, os.devnull)
        ids, collect_out = collect(workdir, n, env)
        kill_tagged(tag)
        entry = {"collected": len(ids), "collect_output": collect_out if not ids else "", "tests": {}}
        collect_error = None
        if not ids and "ERROR collecting" in collect_out:
            # The module did not import: count its tests from its source (a parametrized
            # test counts once), the in-scope ones failed by the import error.
            collect_error = first_error_line(collect_out)
            ids = ["%s::%s" % (n, name) for name in classes]
            entry["collected"] = len(ids)
            entry["collection_error"] = collect_error
        in_scope = []
        for nodeid in ids:
            why = classes.get(base_of(nodeid))
            if why is None:
                why = ["not classified"]
            entry["tests"][nodeid] = {"scope": "out" if why else "in", "reasons": why}
            if not why:
                skip = SAFETY_SKIP.get("%s::%s" % (n, base_of(nodeid)))
                if collect_error:
                    entry["tests"][nodeid].update(outcome="failed", when="collection", error=collect_error,
                                                  where="module import", longrepr=collect_out[-2500:])
                elif skip:
                    entry["tests"][nodeid].update(outcome="not run (safety)", error=skip)
                else:
                    in_scope.append(nodeid)
        print("%s: collected %d, in scope %d" % (n, len(ids), len(in_scope)), flush=True)
        if time.time() < deadline:
            outcome = run_file(workdir, n, in_scope, tag, deadline)
        else:
            outcome = {i: {"outcome": "not run (deadline)"} for i in in_scope}
        for nodeid, res in outcome.items():
            entry["tests"].setdefault(nodeid, {"scope": "in", "reasons": []}).update(res)
        counts = {}
        for t in entry["tests"].values():
            key = t.get("outcome", "out of scope") if t["scope"] == "in" else "out of scope"
            if key == "failed" and t.get("timeout"):
                key = "timed out"
            counts[key] = counts.get(key, 0) + 1
        entry["counts"] = counts
        print("   ", counts, flush=True)
        summary[n] = entry
        json.dump(summary, open(summary_path, "w"), indent=1)
    write_md(summary, os.path.join(workdir, "summary.md"))


def write_md(summary, path):
    out = ["| file | collected | out of scope | in scope | passed | failed | timed out | hung | skipped/not run |",
           "|---|---|---|---|---|---|---|---|---|"]
    tot = [0] * 8
    for n, e in sorted(summary.items()):
        c = e["counts"]
        row = [e["collected"], c.get("out of scope", 0), e["collected"] - c.get("out of scope", 0),
               c.get("passed", 0), c.get("failed", 0), c.get("timed out", 0), c.get("hung", 0),
               sum(v for k, v in c.items() if k.startswith("not run") or k == "skipped")]
        tot = [a + b for a, b in zip(tot, row)]
        out.append("| %s | %s |" % (n, " | ".join(map(str, row))))
    out.append("| **total** | %s |" % " | ".join(map(str, tot)))
    if tot[2]:
        out.append("\npass rate in scope: %d/%d = %.1f%%" % (tot[3], tot[2], 100.0 * tot[3] / tot[2]))
    out.append("\n## failures\n")
    for n, e in sorted(summary.items()):
        for nodeid, t in e["tests"].items():
            if t.get("outcome") in ("failed", "hung"):
                out.append("- `%s` [%s%s] %s — %s" % (nodeid, t["outcome"], " timeout" if t.get("timeout") else "",
                                                    t.get("error", ""), t.get("where", "")))
    open(path, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
