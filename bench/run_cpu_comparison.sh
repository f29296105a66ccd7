#!/usr/bin/env bash
# Strata vs PyTorch on this machine's CPU, side by side (docs/benchmarks.md).
# Builds nothing: give it a build directory holding bench/bench_train and
# app/strata-run (e.g. cmake --build build --target bench_train strata-run).
#
#   bench/run_cpu_comparison.sh BUILD_DIR [REPS]
#
# Environment: STEPS (400), WARMUP (50), BATCH (128), CNN_STEPS (60, batch 64), CNN_BN_STEPS (30),
# SKIP_FULL_RUN=1 to skip the 10-epoch strata-run (peak RSS, accuracy),
# STRATA_STRATEGY_FULL to run that with another strategy (e.g. mirrored),
# PEER_CORETYPE (OpenBLAS kernel set for PyTorch; default: the fastest that
# computes correctly here, picked by bench/pytorch_coretype.py --pick; the
# environment's OPENBLAS_CORETYPE is ignored, it may name a slow safe set),
# PEER_ALLOCATOR (glibc, glibc-kept, tcmalloc or jemalloc: PyTorch's malloc;
# default: the fastest, bench/pytorch_allocator.py --pick: glibc gives large
# freed blocks back to the system, and every step faults them in again),
# PEER_CAPABILITY (ATEN_CPU_CAPABILITY for PyTorch's element-wise kernels;
# default: the fastest correct one, bench/pytorch_capability.py --pick; the
# CNN peers then run under every correct one and keep the faster),
# OPENBLAS_LIB_DIR (/usr/lib/x86_64-linux-gnu/openblas-openmp), TORCH_PYTHON
# (/usr/bin/python3: Debian's python3-torch), OUT (a file to keep the JSON lines),
# QUIET_WAIT (see below), SUMMARY_ONLY=1 to print the tables of an existing OUT.
#
# Every repetition runs each workload once, Strata and PyTorch alternating, so
# slow phases of a shared machine hit both; the table shows medians over the
# repetitions, the spread (min-max) and the ratio Strata / PyTorch of medians.
set -euo pipefail

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BUILD=$(cd "$1" && pwd)
REPS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
STEPS=${STEPS:-400}
WARMUP=${WARMUP:-50}
BATCH=${BATCH:-128}
PY=${TORCH_PYTHON:-/usr/bin/python3}
CNN_STEPS=${CNN_STEPS:-60}
CNN_PROJECT="$ROOT/resources/examples/fashion-cnn.strata"
CNN_BN_PROJECT="$ROOT/resources/examples/fashion-cnn-bn.strata"
CNN_BN_STEPS=${CNN_BN_STEPS:-30}
unset OPENBLAS_CORETYPE
# The peer's allocator is the probe's choice (PEER_ALLOCATOR), not the caller's.
unset LD_PRELOAD GLIBC_TUNABLES
BLAS_DIR=${OPENBLAS_LIB_DIR:-/usr/lib/x86_64-linux-gnu/openblas-openmp}
BENCH_TRAIN="$BUILD/bench/bench_train"
STRATA_RUN="$BUILD/app/strata-run"
for f in "$BENCH_TRAIN" "$STRATA_RUN"; do
  [[ -x "$f" ]] || { echo "missing $f: build the bench_train and strata-run targets first" >&2; exit 2; }
done
[[ -f "$BLAS_DIR/libblas.so.3" ]] || { echo "no OpenBLAS in $BLAS_DIR (apt install libopenblas0-openmp)" >&2; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { echo "$PY has no torch (apt install python3-torch)" >&2; exit 2; }

OUT=${OUT:-$(mktemp /tmp/strata-cpu-comparison.XXXXXX.jsonl)}
if [[ "${SUMMARY_ONLY:-0}" == 1 ]]; then REPS=0; SKIP_FULL_RUN=1; else : >"$OUT"; : >"$OUT.probe"; fi
# A probe that found nothing usable says why in its last lines (its records
# go to $OUT.probe): shown, rather than set -e ending the script unexplained.
probe_failed() { tail -3 "$OUT.probe" >&2; exit 2; }
# The peer in its best correct configuration: OpenBLAS (openmp build) with
# the kernel set the probe found fastest among those that compute correctly.
if [[ -z "${PEER_CORETYPE:-}" && "${SUMMARY_ONLY:-0}" != 1 ]]; then
  echo "probing OpenBLAS kernel sets for the PyTorch peer (bench/pytorch_coretype.py)..." >&2
  PEER_CORETYPE=$(OPENBLAS_LIB_DIR="$BLAS_DIR" "$PY" "$HERE/pytorch_coretype.py" --pick --rounds 2 --trials 15 2>>"$OUT.probe") || probe_failed
  sed 's/^/  /' "$OUT.probe" >&2
fi
PEER_CORETYPE=${PEER_CORETYPE:-DEFAULT}
echo "PyTorch peer: OpenBLAS from $BLAS_DIR, OPENBLAS_CORETYPE=$PEER_CORETYPE" >&2
torch_env=(env LD_LIBRARY_PATH="$BLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
[[ "$PEER_CORETYPE" != DEFAULT ]] && torch_env+=(OPENBLAS_CORETYPE="$PEER_CORETYPE")
# Its memory allocator: with glibc's defaults each step of the CNN (and, less,
# the MLP) faults its large tensors in again, as PyTorch's tuning guide warns.
if [[ -z "${PEER_ALLOCATOR:-}" && "${SUMMARY_ONLY:-0}" != 1 ]]; then
  echo "probing memory allocators for the PyTorch peer (bench/pytorch_allocator.py)..." >&2
  PEER_ALLOCATOR=$("${torch_env[@]}" "$PY" "$HERE/pytorch_allocator.py" --pick 2>>"$OUT.probe") || probe_failed
  sed 's/^/  /' "$OUT.probe" | grep '"allocator"' >&2
fi
if [[ -n "${PEER_ALLOCATOR:-}" ]]; then
  allocator_env=$("$PY" "$HERE/pytorch_allocator.py" --env "$PEER_ALLOCATOR") || exit 2
  [[ -n "$allocator_env" ]] && torch_env+=("$allocator_env")
  echo "PyTorch peer: allocator $PEER_ALLOCATOR${allocator_env:+ ($allocator_env)}" >&2
fi
# And its element-wise kernels: PyTorch's own pick by CPU capability is not
# always its fastest (AVX2 on an AVX-512 EPYC).
CNN_CAPABILITIES=${PEER_CAPABILITY:-}
if [[ -z "${PEER_CAPABILITY:-}" && "${SUMMARY_ONLY:-0}" != 1 ]]; then
  echo "probing ATen CPU kernel sets for the PyTorch peer (bench/pytorch_capability.py)..." >&2
  PEER_CAPABILITY=$("${torch_env[@]}" "$PY" "$HERE/pytorch_capability.py" --pick --rounds 4 --trials 10 2>>"$OUT.probe") || probe_failed
  sed 's/^/  /' "$OUT.probe" | grep aten_cpu_capability >&2
  # The probe times the MLP. The CNNs' element-wise kernels (batch norm,
  # pooling, dropout) are others, and between AVX2 and AVX-512 the faster
  # there may be the other one (on an AVX-512 EPYC the MLP probe once chose
  # AVX-512 while PyTorch's CNN+BN step ran ~5% faster on AVX2). So the CNN
  # peers run under every kernel set the probe found correct but the portable
  # one, and each repetition keeps the faster.
  CNN_CAPABILITIES=$("$PY" -c '
import json, sys
caps = {r["ATEN_CPU_CAPABILITY"] for r in map(json.loads, open(sys.argv[1]))
        if r.get("bench") == "aten_cpu_capability" and r.get("correct") and r["ATEN_CPU_CAPABILITY"] != "default"}
print(" ".join(sorted(caps)))' "$OUT.probe")
  CNN_CAPABILITIES=${CNN_CAPABILITIES:-$PEER_CAPABILITY}
  echo "PyTorch CNN peers: the faster of ATEN_CPU_CAPABILITY in [${CNN_CAPABILITIES:-its own pick}] per repetition" >&2
fi
if [[ -n "${PEER_CAPABILITY:-}" ]]; then
  torch_env+=(ATEN_CPU_CAPABILITY="$PEER_CAPABILITY")
  echo "PyTorch peer: ATEN_CPU_CAPABILITY=$PEER_CAPABILITY" >&2
fi
cnn=(--batch 64 --steps "$CNN_STEPS" --warmup 10 --reps 1)
cnn_bn=(--batch 64 --steps "$CNN_BN_STEPS" --warmup 5 --reps 1)
common=(--batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --reps 1)

# Noise gauge: CPU time the whole machine spent busy during a repetition minus
# what this script's children used, in cores. Anything well above 0 means
# other work competed with the benchmarks for this machine's cores.
machine_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
our_cpu() { awk '{print $16+$17}' /proc/$$/stat; }
cpu_mark() { busy0=$(machine_busy); ours0=$(our_cpu); t0=$(date +%s.%N); }
cpu_report() {
  local busy1 ours1 t1
  busy1=$(machine_busy); ours1=$(our_cpu); t1=$(date +%s.%N)
  awk -v b="$((busy1 - busy0))" -v o="$((ours1 - ours0))" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" -v rep="$1" \
    'BEGIN { printf "{\"bench\": \"noise\", \"rep\": %d, \"other_cores\": %.2f}\n", rep, (b - o) / hz / (t1 - t0) }' >>"$OUT"
}

# Before each repetition wait (up to QUIET_WAIT seconds, default 120; 0 = do
# not wait) until the machine has been idle for a second, so repetitions
# start on a quiet machine when there is one.
quiet_wait() {
  local deadline=$((SECONDS + ${QUIET_WAIT:-120})) b0 b1
  while ((SECONDS < deadline)); do
    b0=$(machine_busy); sleep 1; b1=$(machine_busy)
    (((b1 - b0) * 100 < 15 * $(getconf CLK_TCK))) && return 0
  done
  echo "  machine still busy after ${QUIET_WAIT:-120}s; measuring anyway" >&2
}

# pytorch_cnn.py under each of CNN_CAPABILITIES (its lines tagged with it).
cnn_peer() {
  local cap
  for cap in ${CNN_CAPABILITIES:-own}; do
    local cap_env=()
    [[ "$cap" != own ]] && cap_env=(ATEN_CPU_CAPABILITY="$cap")
    "${torch_env[@]}" "${cap_env[@]}" "$PY" "$HERE/pytorch_cnn.py" "$@" |
      sed "$tag; s/^{/{\"peer_capability\": \"$cap\", /" >>"$OUT"
  done
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "JSON lines: $OUT" >&2
for ((rep = 1; rep <= REPS; ++rep)); do
  quiet_wait
  echo "repetition $rep/$REPS" >&2
  cpu_mark
  tag="s/^{/{\"cmp_rep\": $rep, /"
  "$BENCH_TRAIN" "${common[@]}" | grep -v '"summary"' | sed "$tag" >>"$OUT"
  "${torch_env[@]}" "$PY" "$HERE/pytorch_mlp.py" --threads 1,2 "${common[@]}" | grep -v '"summary"' | sed "$tag" >>"$OUT"
  "${torch_env[@]}" "$PY" "$HERE/pytorch_ddp.py" --procs 2 --threads 1 "${common[@]}" | grep -v '"summary"' | sed "$tag" >>"$OUT"
  "$BENCH_TRAIN" "${common[@]}" --strategy mirrored --replicas 1 --threads 1 | grep -v '"summary"' | sed "$tag" >>"$OUT"
  for t in 1 2; do
    "$BENCH_TRAIN" --project "$CNN_PROJECT" "${cnn[@]}" --strategy one_device --threads $t | grep -v '"summary"' | sed "$tag" >>"$OUT"
    cnn_peer --threads $t "${cnn[@]}"
    "$BENCH_TRAIN" --project "$CNN_BN_PROJECT" "${cnn_bn[@]}" --strategy one_device --threads $t | grep -v '"summary"' | sed "$tag" >>"$OUT"
    cnn_peer --model bn --threads $t "${cnn_bn[@]}"
  done
  cpu_report "$rep"
done

if [[ "${SKIP_FULL_RUN:-0}" != 1 ]]; then
  echo "full 10-epoch run of resources/examples/fashion-mlp.strata (peak RSS)" >&2
  extra=()
  if [[ -n "${STRATA_STRATEGY_FULL:-}" ]]; then extra=(--strategy "$STRATA_STRATEGY_FULL"); fi
  events=$(mktemp) timing=$(mktemp)
  /usr/bin/time -v -o "$timing" "$STRATA_RUN" "$ROOT/resources/examples/fashion-mlp.strata" --no-run-dir \
    --events jsonl "${extra[@]}" >"$events"
  rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$timing")
  wall=$(sed -n 's/.*Elapsed (wall clock) time.*: *//p' "$timing")
  "$PY" - "$events" "$rss_kb" "$wall" "${STRATA_STRATEGY_FULL:-project}" >>"$OUT" <<'EOF'
import json, sys
events, rss_kb, wall, strategy = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
epochs = [e for e in map(json.loads, open(events)) if e.get("type") == "epoch"]
last = epochs[-1] if epochs else {}
print(json.dumps({"bench": "full_run", "strategy": strategy, "epochs": len(epochs),
                  "val_accuracy": last.get("val_accuracy"), "peak_rss_mb": rss_kb / 1024,
                  "wall": wall, "epoch_samples_per_sec": [e.get("samples_per_sec") for e in epochs]}))
EOF
  rm -f "$events" "$timing"
fi

"$PY" - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
noise = {r["rep"]: r["other_cores"] for r in rows if r["bench"] == "noise"}
QUIET = 0.2  # cores of other work tolerated in a "quiet" repetition

def matching(pred, reps):
    return [r for r in rows if "samples_per_sec" in r and r.get("cmp_rep") in reps and pred(r)]

def rates(pred, reps):
    return [r["samples_per_sec"] for r in matching(pred, reps)]

def fastest_per_rep(pred, reps):
    """rates() of a workload run under several peer configurations: each repetition's fastest."""
    best = {}
    for r in matching(pred, reps):
        best[r["cmp_rep"]] = max(best.get(r["cmp_rep"], 0.0), r["samples_per_sec"])
    return list(best.values())

def cell(v):
    if not v:
        return "n/a".rjust(24)
    return f"{statistics.median(v):>9,.0f} ({min(v):,.0f}-{max(v):,.0f})".rjust(24)

def ratio(a, b):
    return f"{statistics.median(a) / statistics.median(b):.2f}" if a and b else "n/a"

MLP = "mlp-784-256-128-10"

def table(reps, title):
    # bench_train runs mirrored with the sharded update (the default) and
    # without it: a row takes one of them, never both.
    S = lambda strat, nrep, th, model=MLP, sharded=False: rates(
        lambda r: r["bench"] == "train" and r["strategy"] == strat and r["replicas"] == nrep and r["threads"] == th
        and r.get("model", MLP) == model and r.get("sharded_update", False) == sharded, reps)
    P = lambda th: rates(lambda r: r["bench"] == "pytorch_mlp" and r["threads"] == th, reps)
    BN = "batch normalization"  # in the BN project's model name
    # The CNN peers ran under one or more ATen kernel sets.
    C = lambda th, bn=False: fastest_per_rep(lambda r: r["bench"] == "pytorch_cnn" and r["threads"] == th
                                             and (r.get("model", "tutorial") == "bn") == bn, reps)
    SC = lambda th, bn=False: rates(lambda r: r["bench"] == "train" and r.get("model", MLP) != MLP
                                    and (BN in r.get("model", "")) == bn and r["threads"] == th, reps)
    D = rates(lambda r: r["bench"] == "pytorch_ddp", reps)
    print(f"\n{title}: samples/s, median (min-max) over {len(reps)} repetitions {sorted(reps)}\n")
    print(f"{'workload':<34}{'Strata':>24}{'PyTorch':>24}  Strata/PyTorch")
    for name, s, p in [("MLP b128, 1 thread", S("one_device", 1, 1), P(1)),
                       ("MLP b128, 2 threads", S("one_device", 1, 2), P(2)),
                       ("MLP mirrored 2x1 vs DDP gloo 2x1", S("mirrored", 2, 2, sharded=True), D),
                       ("  the same, full update per replica", S("mirrored", 2, 2), D),
                       ("TF-tutorial CNN b64, 1 thread", SC(1), C(1)),
                       ("TF-tutorial CNN b64, 2 threads", SC(2), C(2)),
                       ("CNN+BN b64, 1 thread", SC(1, True), C(1, True)),
                       ("CNN+BN b64, 2 threads", SC(2, True), C(2, True))]:
        print(f"{name:<34}{cell(s)}{cell(p)}  {ratio(s, p):>14}")
    m1, m2 = S("mirrored", 1, 1), S("mirrored", 2, 2, sharded=True)
    print(f"Strata scaling, mirrored 2 replicas / 1 replica (1 thread each): "
          f"{cell(m2).strip()} / {cell(m1).strip()} = {ratio(m2, m1)}x")
    # Against one_device 1 thread, paired: bench_train interleaves its
    # configurations, so the two runs of one inner repetition are seconds
    # apart and share the host's load of that moment (which swings single
    # runs by more than the effect measured).
    def by_rep(strat, nrep, th, sharded):
        return {(r["cmp_rep"], r["rep"]): r["samples_per_sec"] for r in rows
                if r["bench"] == "train" and r.get("cmp_rep") in reps and "samples_per_sec" in r
                and r["strategy"] == strat and r["replicas"] == nrep and r["threads"] == th
                and r.get("model", MLP) == MLP and r.get("sharded_update", False) == sharded}
    one, two = by_rep("one_device", 1, 1, False), by_rep("mirrored", 2, 2, True)
    pairs = sorted(two[k] / one[k] for k in one.keys() & two.keys())
    if pairs:
        print(f"Strata scaling, mirrored 2x1 / one_device 1 thread, paired by repetition: median "
              f"{statistics.median(pairs):.2f}x over {len(pairs)} pairs ({pairs[0]:.2f}-{pairs[-1]:.2f})")

info = next((r for r in rows if r["bench"] == "pytorch_info"), {})
cnn_caps = {}
for r in rows:
    if r["bench"] == "pytorch_cnn" and "samples_per_sec" in r:
        key = (r.get("model", "tutorial"), r["threads"], r.get("peer_capability", "?"))
        cnn_caps.setdefault(key, []).append(r["samples_per_sec"])
if len({k[2] for k in cnn_caps}) > 1:
    print("PyTorch CNN peers by ATEN_CPU_CAPABILITY (median samples/s; the table takes each repetition's fastest): "
          + ", ".join(f"{m} {t}t {c} {statistics.median(v):,.0f}" for (m, t, c), v in sorted(cnn_caps.items())))
print(f"\nPyTorch peer: {info.get('torch')} BLAS {info.get('blas_libs')} core {info.get('openblas_core')}"
      f" (OPENBLAS_CORETYPE={info.get('OPENBLAS_CORETYPE')}), ATEN_CPU_CAPABILITY={info.get('ATEN_CPU_CAPABILITY')},"
      f" Adam {info.get('adam', 'for-loop')}, flush_denormal={info.get('flush_denormal')},"
      f" allocator {info.get('allocator', 'glibc (not recorded)')}")
print(f"other processes' CPU use during each repetition, in cores: {[noise[k] for k in sorted(noise)]}")
all_reps = set(noise)
quiet = {k for k, v in noise.items() if v < QUIET}
table(all_reps, "all repetitions" + ("" if quiet == all_reps else " (NOISY: other work competed for the cores)"))
if quiet and quiet != all_reps:
    table(quiet, f"quiet repetitions only (other work < {QUIET} cores)")
for r in rows:
    if r["bench"] == "full_run":
        print(f"\n10-epoch strata-run ({r['strategy']}): peak RSS {r['peak_rss_mb']:.0f} MB, "
              f"final val_accuracy {r['val_accuracy']}, wall {r['wall']}")
EOF
