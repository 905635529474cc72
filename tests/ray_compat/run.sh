#!/bin/bash
# Measures how many of Ray's own Python tests pass against orb's Python package,
# through the `ray` renaming shim in this directory (shim/ray, conftest.py).
#
#   tests/ray_compat/run.sh RAY_SRC [WORKDIR] [--files a.py,b.py] [--deadline HH:MM]
#
# RAY_SRC: a Ray git dir (bare is fine) or a directory holding Ray's test files
# (python/ray/tests/test_basic*.py, test_actor*.py, ...). Ray's files are copied to
# WORKDIR (default: a directory under the system's temp dir), never into this repository.
# Measures the build in ./build (ORB_SNAP=DIR for a copy of one: bin/ and python/);
# builds nothing. Not part of `make test`: Ray's tests are not in this repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$1"; shift
workdir="${TMPDIR:-/tmp}/ray_compat_run"
if [[ $# -gt 0 && "$1" != --* ]]; then workdir="$1"; shift; fi
snap="${ORB_SNAP:-$here/../../build}"
export ORB_BIN_DIR="$snap/bin" ORB_TEST_BIN_DIR="$snap/bin"
exec /usr/bin/python3 "$here/run.py" "$src" "$workdir" "$@"
