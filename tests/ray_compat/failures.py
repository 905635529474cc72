"""Lists a run's failures (WORKDIR/summary.json) with their first error line and the
place it was raised, to group them by cause by hand.

    python3 failures.py WORKDIR
"""
import json
import os
import re
import sys

summary = json.load(open(os.path.join(sys.argv[1], "summary.json")))
rows = []
for name, entry in sorted(summary.items()):
    for nodeid, t in entry["tests"].items():
        if t.get("outcome") in ("failed", "hung"):
            lr = t.get("longrepr", "")
            frames = re.findall(r"^(\S+\.py):(\d+): in (\S+)", lr, re.M)
            orb_frames = [f for f in frames if "orb" in f[0] or "shim" in f[0] or "conftest" in f[0]]
            rows.append((t.get("error", ""), nodeid, t["outcome"] + (" timeout" if t.get("timeout") else ""),
                         "%s:%s %s" % orb_frames[-1] if orb_frames else (t.get("where") or "")))
for error, nodeid, outcome, where in sorted(rows):
    print("%-70s | %-28s | %s\n    %s" % (nodeid, outcome, where, error[:400]))
print(len(rows), "failures")
