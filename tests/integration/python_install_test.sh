#!/usr/bin/env bash
# `pip install ./python` into a fresh virtual environment, offline, against orb installed
# into a temporary prefix; then tests/python_consumer/tour.py — a program outside the
# source tree, on Ray's Python API shape — on the embedded default and on a 3-node
# `orb start` cluster, with a C++ library of its own for the cross-language calls.
# Nothing from the build tree is used.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
cleanup() {
  "$work/prefix/bin/orb" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
unset ORB_BIN_DIR ORB_TEST_BIN_DIR PYTHONPATH ORB_ADDRESS
export ORB_TEMP_DIR="$work/tmp"
mkdir -p "$ORB_TEMP_DIR"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cp -r "$source_dir/python" "$work/python"  # pip's build leaves files beside the sources
rm -rf "$work/python/build"
echo "pip install ./python (building orb._core against $work/prefix)"
ORB_PREFIX="$work/prefix" "$work/venv/bin/pip" install --no-build-isolation --no-index -q "$work/python"

# The program and a C++ library of its own, outside the source tree.
mkdir -p "$work/app" "$work/xlang"
cp "$source_dir/tests/python_consumer/"*.py "$source_dir/python/tests/xlang_module.py" "$work/app/"
g++ -std=c++17 -O1 -shared -fPIC "$source_dir/python/tests/xlang_lib/xlang_functions.cc" \
  -I"$work/prefix/include" -L"$work/prefix/lib" -lorb -Wl,-rpath,"$work/prefix/lib" -o "$work/xlang/libxlang.so"
export PATH="$work/prefix/bin:$PATH"
cd "$work/app"
python="$work/venv/bin/python"

echo "== the embedded default"
timeout 300 "$python" tour.py --xlang-lib "$work/xlang"

echo "== a 3-node cluster"
address=$(orb start --head --port 0 --num-cpus 2 | sed -n 's/^  GCS address: *//p')
orb start --address "$address" --num-cpus 1 >/dev/null
orb start --address "$address" --num-cpus 1 >/dev/null
if ! timeout 300 "$python" tour.py --address "$address" --xlang-lib "$work/xlang" --detached-phase create; then
  echo "-- what the cluster shows now"
  orb status || true
  orb list workers || true
  orb list tasks || true
  exit 1
fi
timeout 120 "$python" tour.py --address "$address" --detached-phase check
orb stop >/dev/null
echo "python_install_test passed"
