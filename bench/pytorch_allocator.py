#!/usr/bin/python3
"""Which memory allocator suits the PyTorch peer on this machine.

PyTorch's CPU tensors come from malloc. glibc serves the large ones (the
TF-tutorial CNN's 3136x1024 dense layer: 12.8 MB per weight, gradient and
Adam moment, and as much again for each temporary of the multi-tensor Adam)
by mmap and gives them back to the system when freed, so every step
page-faults them in again. On a 2-core AMD EPYC (Zen 5) guest that made
PyTorch's CNN steps 2.3x slower (117 ms against 50 ms a step) and its MLP's
1.5x; PyTorch's performance tuning guide recommends another allocator
(tcmalloc, jemalloc) for this reason. For each candidate this starts a
fresh interpreter (the one running this script, /usr/bin/python3 in the
scripts; with the environment given, so the kernel sets the other probes
picked stay), trains the TF-tutorial CNN (bench/pytorch_cnn.py)
on fixed data with Adam (foreach) for a few steps, checks that its loss is
the default allocator's to the bit (an allocator must not change the
arithmetic), and reports the best of several short timings. One JSON line
per candidate.

Candidates: glibc (as it is), glibc-kept (GLIBC_TUNABLES: blocks up to
32 MiB from the heap, and the heap never trimmed, so freed memory is reused
without faults), and tcmalloc and jemalloc through LD_PRELOAD where their
libraries are installed (libtcmalloc-minimal4, libjemalloc2).

  /usr/bin/python3 bench/pytorch_allocator.py [--threads 1]
  /usr/bin/python3 bench/pytorch_allocator.py --pick     # the fastest, for scripts
  /usr/bin/python3 bench/pytorch_allocator.py --env NAME # its VAR=VALUE (nothing for glibc)
"""
import argparse
import json
import os
import subprocess
import sys

from pytorch_coretype import child_failure, print_pick, report  # the sibling probe, run from this folder

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = "/usr/lib/x86_64-linux-gnu"
# The largest block glibc takes from its heap (its limit, 32 MiB on 64-bit
# systems) and a trim threshold it never reaches.
KEPT = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=68719476736"
CANDIDATES = {
    "glibc": None,
    "glibc-kept": ("GLIBC_TUNABLES", KEPT),
    "tcmalloc": ("LD_PRELOAD", f"{LIBS}/libtcmalloc_minimal.so.4"),
    "jemalloc": ("LD_PRELOAD", f"{LIBS}/libjemalloc.so.2"),
}

CHILD = r"""
import json, sys, time
import torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[3])
from pytorch_cnn import make_model
torch.set_num_threads(int(sys.argv[1]))
torch.set_flush_denormal(True)
torch.manual_seed(0)
model = make_model("tutorial")
gen = torch.Generator().manual_seed(1)
x = torch.rand(64, 1, 28, 28, generator=gen)
y = torch.randint(0, 10, (64,), generator=gen)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss
for _ in range(5):
    loss = step()
best = 0.0
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    for _ in range(4):
        step()
    best = max(best, 4 * 64 / (time.perf_counter() - t))
print(json.dumps({"loss_after_5_steps": float(loss), "best_samples_per_sec": best}))
"""


def available():
    """The candidates this machine can run: preloaded libraries must exist."""
    return [n for n, e in CANDIDATES.items() if e is None or e[0] != "LD_PRELOAD" or os.path.exists(e[1])]


def probe(name, threads, trials):
    """One JSON record for one allocator, run in a fresh interpreter."""
    env = dict(os.environ)
    for var in ("GLIBC_TUNABLES", "LD_PRELOAD"):
        env.pop(var, None)
    if CANDIDATES[name]:
        var, value = CANDIDATES[name]
        env[var] = value
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(trials), HERE], env=env, capture_output=True,
                         text=True)
    record = {"bench": "allocator", "allocator": name, "threads": threads}
    if out.returncode != 0:
        return dict(record, best_samples_per_sec=0.0, error=child_failure(out))
    return dict(record, **json.loads(out.stdout.strip().splitlines()[-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2, help="rounds over all allocators (interleaved)")
    ap.add_argument("--pick", action="store_true",
                    help="print only the fastest correct allocator (the records go to stderr)")
    ap.add_argument("--env", metavar="NAME", help="print the allocator's VAR=VALUE (nothing for glibc) and stop")
    args = ap.parse_args()
    if args.env is not None:
        if args.env not in CANDIDATES:
            sys.exit(f"pytorch_allocator: unknown allocator '{args.env}' (known: {', '.join(CANDIDATES)})")
        if args.env not in available():
            sys.exit(f"pytorch_allocator: {args.env} is not installed here ({CANDIDATES[args.env][1]} missing)")
        if CANDIDATES[args.env]:
            print("=".join(CANDIDATES[args.env]))
        return
    best = {}
    reference = None
    for _ in range(args.rounds):
        for name in available():  # glibc first: the loss every other must reproduce
            r = probe(name, args.threads, args.trials)
            if name == "glibc" and "error" in r:
                # Without glibc's loss nothing can be checked: its failure is the probe's.
                sys.exit(f"pytorch_allocator: the peer failed with glibc's allocator: {r['error']}")
            if reference is None and name == "glibc":
                reference = r["loss_after_5_steps"]
            r["correct"] = "error" not in r and r["loss_after_5_steps"] == reference
            report(r, best, name, "best_samples_per_sec", args.pick)
    if args.pick:
        print_pick(best, "pytorch_allocator", "allocator")


if __name__ == "__main__":
    main()
