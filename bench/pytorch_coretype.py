#!/usr/bin/python3
"""Which OPENBLAS_CORETYPE suits this CPU for the MLP's matrix products.

For each core type, starts a fresh /usr/bin/python3 with OpenBLAS (openmp
build) forced to that kernel set, checks the three products of a training
step (forward x W^T, weight gradient g^T x, input gradient g W) for the
784-256-128-10 MLP at batch 128 against float64, and reports the best of
many short timings (best-of is the least disturbed by other processes on a
shared machine). One JSON line per core type.

  /usr/bin/python3 bench/pytorch_coretype.py [--types SKYLAKEX,COOPERLAKE,ZEN,HASWELL] [--threads 1]
  /usr/bin/python3 bench/pytorch_coretype.py --pick     # the fastest correct one, for scripts

A kernel set the CPU cannot run (AVX-512 kernels on an AVX2 machine die with
SIGILL) is reported as not correct.
"""
import argparse
import json
import os
import subprocess
import sys

BLAS_DIR = os.environ.get("OPENBLAS_LIB_DIR", "/usr/lib/x86_64-linux-gnu/openblas-openmp")

CHILD = r"""
import ctypes, json, os, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
shapes = [(128, 784, 256), (128, 256, 128), (128, 128, 10)]
gen = torch.Generator().manual_seed(0)
mats = [(torch.randn(m, k, generator=gen), torch.randn(n, k, generator=gen), torch.randn(m, n, generator=gen))
        for m, k, n in shapes]
def step():
    return [(torch.nn.functional.linear(x, w), g.t().mm(x), g.mm(w)) for x, w, g in mats]
err = 0.0
for (x, w, g), outs in zip(mats, step()):
    refs = (x.double() @ w.double().t(), g.double().t() @ x.double(), g.double() @ w.double())
    for o, r in zip(outs, refs):
        err = max(err, float(((o.double() - r).abs().max() / r.abs().max())))
flops = sum(2 * m * k * n * 3 for m, k, n in shapes)
for _ in range(20):
    step()
best = 0.0
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    for _ in range(20):
        step()
    best = max(best, 20 * flops / (time.perf_counter() - t) / 1e9)
lib = ctypes.CDLL("libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(json.dumps({"bench": "openblas_coretype", "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
                  "openblas_core": lib.openblas_get_corename().decode(), "threads": int(sys.argv[1]),
                  "best_gflops": best, "max_rel_error": err, "correct": err < 1e-5}))
"""


def child_failure(out):
    """Why a probe's child process failed, from its CompletedProcess."""
    if out.returncode < 0:
        sigill = " (illegal instruction: this CPU lacks the kernels' instructions)" if out.returncode == -4 else ""
        return f"killed by signal {-out.returncode}{sigill}"
    return f"exit status {out.returncode}: {out.stderr.strip().splitlines()[-1:]}"


def report(record, best, name, figure, pick):
    """Prints a probe's record (to stderr under --pick) and keeps the best
    figure of each correct candidate in `best`."""
    print(json.dumps(record), file=sys.stderr if pick else sys.stdout, flush=True)
    if record["correct"]:
        best[name] = max(best.get(name, 0.0), record[figure])


def print_pick(best, script, what):
    """--pick's answer: the candidate with the best figure."""
    if not best:
        sys.exit(f"{script}: no {what} computed correctly")
    print(max(best, key=best.get))


def probe(core_type, threads, trials):
    """One JSON record for one core type, run in a fresh interpreter: a kernel
    set this CPU cannot execute (SIGILL) or that fails is reported, not fatal."""
    env = dict(os.environ, LD_LIBRARY_PATH=BLAS_DIR)
    env.pop("OPENBLAS_CORETYPE", None)
    if core_type != "DEFAULT":
        env["OPENBLAS_CORETYPE"] = core_type
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(trials)], env=env, capture_output=True, text=True)
    if out.returncode == 0:
        return json.loads(out.stdout.strip().splitlines()[-1])
    return {"bench": "openblas_coretype", "OPENBLAS_CORETYPE": None if core_type == "DEFAULT" else core_type,
            "threads": threads, "best_gflops": 0.0, "correct": False, "error": child_failure(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--types", default="DEFAULT,SKYLAKEX,COOPERLAKE,ZEN,HASWELL",
                    help="comma-separated core types; DEFAULT = OpenBLAS's own detection")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2, help="rounds over all types (interleaved)")
    ap.add_argument("--pick", action="store_true",
                    help="print only the fastest correct core type (the records go to stderr); "
                         "DEFAULT when OpenBLAS's own choice is the fastest")
    args = ap.parse_args()
    best = {}
    for _ in range(args.rounds):
        for t in args.types.split(","):
            report(probe(t, args.threads, args.trials), best, t, "best_gflops", args.pick)
    if args.pick:
        print_pick(best, "pytorch_coretype", "core type")


if __name__ == "__main__":
    main()
