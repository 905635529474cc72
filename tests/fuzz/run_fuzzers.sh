#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cc) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in BUILD_DIR/fuzz, then runs each for ORB_FUZZ_SECONDS
# (default 20) from its seed corpus, tests/fuzz/corpus/NAME (read only; what a run
# discovers stays in BUILD_DIR/fuzz/corpus/NAME). Fails on any crash, sanitizer report,
# leak, hang (10 s) or runaway memory, printing how to reproduce it; the input is kept
# under BUILD_DIR/fuzz/findings/NAME/.
#
#   run_fuzzers.sh SOURCE_DIR BUILD_DIR [NAME...]
#   ORB_FUZZ_WRITE_SEEDS=1 run_fuzzers.sh ...   writes the generated seeds (seed-N) again
#                                               instead; regression-* inputs stay
set -uo pipefail
source_dir=$(cd "$1" && pwd)
build_dir=$(mkdir -p "$2" && cd "$2" && pwd)/fuzz
shift 2
names=("$@")
[[ ${#names[@]} == 0 ]] && names=(fuzz_gcs_rpc fuzz_node_rpc fuzz_gossip fuzz_object_stream fuzz_call_stream fuzz_value)
seconds=${ORB_FUZZ_SECONDS:-20}

clang=$(command -v clang++ || command -v clang++-14) || { echo "run_fuzzers: clang++ is needed (make deps)"; exit 1; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ ! -f $build_dir/build.ninja ]]; then
  cmake -S "$source_dir" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$clang" \
    -DORB_FUZZ=ON -DBUILD_TESTING=OFF "${launcher[@]}" >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log"; exit 1; }
fi
if ! cmake --build "$build_dir" --target "${names[@]}" -j "${JOBS:-2}" >"$build_dir.build.log" 2>&1; then
  grep -E "error|FAILED" -A3 "$build_dir.build.log" | head -60
  echo "run_fuzzers: the fuzz build failed (log: $build_dir.build.log)"
  exit 1
fi

if [[ -n ${ORB_FUZZ_WRITE_SEEDS:-} ]]; then
  for name in "${names[@]}"; do
    ORB_FUZZ_WRITE_SEEDS="$source_dir/tests/fuzz/corpus/$name" "$build_dir/tests/fuzz/$name"
    echo "$name: $(ls "$source_dir/tests/fuzz/corpus/$name" | wc -l) seeds"
  done
  exit 0
fi

failures=0
for name in "${names[@]}"; do
  corpus="$build_dir/corpus/$name"
  findings="$build_dir/findings/$name"
  mkdir -p "$corpus" "$findings"
  log="$build_dir/$name.log"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS=suppressions="$source_dir/tests/fuzz/lsan.supp" \
    "$build_dir/tests/fuzz/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "$source_dir/tests/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "{\"fuzzer\":\"$name\",\"seconds\":$seconds,\"runs\":${runs:-0},\"coverage_edges\":${edges:-0},\"exit\":$rc}"
  if [[ $rc != 0 ]]; then
    failures=$((failures + 1))
    echo "FUZZ FAILURE: $name (exit $rc); its log ends:" >&2
    grep -v '^#[0-9]' "$log" | tail -40 >&2
    echo "reproduce: $build_dir/tests/fuzz/$name $(ls -t "$findings"/* 2>/dev/null | head -1)" >&2
  fi
done
((failures == 0)) || { echo "fuzzers: $failures failed"; exit 1; }
echo "fuzzers: passed"
