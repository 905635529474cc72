"""The Python examples run as a user runs them (a process each, on its own local
cluster), and the training example survives a killed trainer with the same weights."""
import json
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")


def run(script, *args, timeout=300):
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] + list(args), capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_parallel_map():
    out = run("parallel_map.py", "--chunks", "8", "--samples", "50000")
    estimate = float(out.split("pi is about ")[1].split()[0])
    assert abs(estimate - 3.1416) < 0.05


def test_actor_pool():
    out = run("actor_pool.py", "--actors", "3")
    assert "20 sentences encoded by" in out and "in order" in out
    assert "The cat is in the hat    -> [0, -1, 6, 5, 0, -1]" in out


def test_training_survives_a_killed_trainer(tmp_path):
    pytest.importorskip("torch")
    calm, killed = tmp_path / "calm.json", tmp_path / "killed.json"
    run("data_parallel_training.py", "--epochs", "4", "--weights-out", str(calm))
    out = run("data_parallel_training.py", "--epochs", "4", "--kill-at-epoch", "2", "--weights-out", str(killed))
    assert "epoch 2 failed" in out and "restarting from the last checkpoint" in out
    a, b = json.loads(calm.read_text()), json.loads(killed.read_text())
    assert a.keys() == b.keys()
    for name in a:
        diff = max(abs(x - y) for x, y in zip(_flat(a[name]), _flat(b[name])))
        assert diff <= 1e-5, (name, diff)


def _flat(value):
    if isinstance(value, list):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def test_rl_training_improves_and_survives_killed_actors(tmp_path):
    calm, killed = tmp_path / "calm.json", tmp_path / "killed.json"
    out = run("rl_training.py", "--iterations", "30", "--policy-out", str(calm))
    first, last = (float(x) for x in out.split("mean return ")[1].split(" over the last")[0].split(
        " over the first 5 iterations, "))
    assert last > 1.5 * first, out
    out = run("rl_training.py", "--iterations", "30", "--kill-at-iteration", "10", "--policy-out", str(killed))
    assert "iteration 10 failed" in out and "released after 1 rebuild(s)" in out, out
    assert json.loads(calm.read_text()) == json.loads(killed.read_text())
