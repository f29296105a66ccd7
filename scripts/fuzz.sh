#!/usr/bin/env bash
# Fuzzes every target of tools/fuzz with libFuzzer (clang, ASan + UBSan):
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every target)
#
# Starts from the seed corpus in tools/fuzz/corpus/<target>/ and adds what it
# finds there (new coverage) under build-fuzz/corpus/<target>/. A crash, leak,
# timeout or an exception other than strata::Error leaves its input in
# build-fuzz/findings/<target>/: add it to tools/fuzz/corpus/<target>/ with the
# fix, and the test suite replays it from then on. Prints one line per target:
# executions per second, coverage (edges), findings.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(project idx csv safetensors checkpoint_state events ps_wire)
cmake --preset fuzz >/dev/null || exit 3
cmake --build --preset fuzz -j "${JOBS:-2}" --target "${targets[@]/#/fuzz_}" || exit 3
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
# Findings of this run only: inputs kept from earlier runs (already fixed,
# and in the corpus) must not count again.
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
# Each target runs in its own process and writes only its own folders, so
# they run JOBS at a time (two cores fuzz two targets in the time of one).
fuzz_one() {
  local t="$1"
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  "build-fuzz/tools/fuzz/fuzz_$t" "build-fuzz/corpus/$t" "tools/fuzz/corpus/$t" -max_total_time="$seconds" \
    -max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="build-fuzz/findings/$t/" -print_final_stats=1 \
    >"build-fuzz/fuzz_$t.log" 2>&1
  echo $? >"build-fuzz/fuzz_$t.rc"
}
jobs_max="${JOBS:-2}"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  fuzz_one "$t" &
done
wait
for t in "${targets[@]}"; do
  log="build-fuzz/fuzz_$t.log"
  rc=$(cat "build-fuzz/fuzz_$t.rc")
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  found=$(find "build-fuzz/findings/$t" -type f -newer "$stamp" | wc -l)
  printf '%-18s %8s s  %10s execs  %7s exec/s  %6s edges  %s findings (exit %s)\n' "$t" "$seconds" "${execs:-?}" \
    "${rate:-?}" "${cov:-?}" "$found" "$rc"
  [ "$rc" -ne 0 ] || [ "$found" -ne 0 ] && status=1
done
exit $status
