"""The first example of docs/python.md runs exactly as printed, and prints what its
comments say."""
import os
import re
import subprocess
import sys

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "python.md")


def test_docs_first_example_runs_as_printed(tmp_path):
    with open(DOC) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == ["[0, 1, 4, 9]", "15"]
