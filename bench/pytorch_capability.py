#!/usr/bin/python3
"""Which ATen CPU kernel set (ATEN_CPU_CAPABILITY) suits this CPU for the peer.

PyTorch picks its element-wise kernels (the optimizer's arithmetic, the
activations, the loss) by CPU capability, and its own choice is not always
the fastest that runs: PyTorch 1.13 on an AVX-512 EPYC chose AVX2, and its
Adam step's division ran 3.7x faster on its AVX-512 kernels. For each
capability this starts a fresh /usr/bin/python3 (with the environment given,
so the OpenBLAS kernel set the other probe picked stays), trains the
784-256-128-10 MLP on fixed data for a few steps with SGD and momentum and
evaluates Adam's element-wise formula on fixed random tensors, checks both
against the portable kernels' ("default"), and reports the best of many
short timings of Adam training steps. One JSON line per capability.

The check trains with SGD, not Adam: Adam's first steps move each weight by
about lr * sign(gradient), so where a gradient is ~0 a rounding difference
in the last bit (any vectorised sum reassociates) flips the step, and the
weights of two correct kernel sets differ by ~1e-3 of their size after ten
steps. That once marked PyTorch's AVX2 and AVX-512 kernels wrong on an Intel
Xeon and left the peer on the slower portable ones.

  /usr/bin/python3 bench/pytorch_capability.py [--capabilities default,avx2,avx512] [--threads 1]
  /usr/bin/python3 bench/pytorch_capability.py --pick   # the fastest correct one, for scripts

A kernel set the CPU cannot run (SIGILL) is reported as not correct.
"""
import argparse
import json
import os
import subprocess
import sys

from pytorch_coretype import child_failure, print_pick, report  # the sibling probe, run from this folder

CHILD = r"""
import json, os, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10))
loss_fn = torch.nn.CrossEntropyLoss()
gen = torch.Generator().manual_seed(1)
x = torch.rand(128, 784, generator=gen)
y = torch.randint(0, 10, (128,), generator=gen)
def step():
    opt.zero_grad(set_to_none=True)
    loss_fn(model(x), y).backward()
    opt.step()
# The check: SGD steps (forward, backward, the update's arithmetic) ...
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
for _ in range(10):
    step()
weights = torch.cat([p.detach().flatten() for p in model.parameters()])
# ... and Adam's own element-wise arithmetic (sqrt, division) on fixed inputs.
a = torch.randn(100000, generator=gen)
b = torch.rand(100000, generator=gen) + 1e-3
adam_like = 0.9 * a + 0.1 * a / (b.sqrt() + 1e-7)
torch.save({"weights": weights, "adam_like": adam_like}, sys.argv[3])
# The timing: Adam (foreach) from the same start.
torch.manual_seed(0)
for m in model:
    if isinstance(m, torch.nn.Linear):
        m.reset_parameters()
# foreach: the multi-tensor Adam, PyTorch's fastest on CPU. Its CPU default
# (PyTorch 1.13) is the per-parameter loop, ~3x slower on the MLP's step.
opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
for _ in range(10):
    step()
best = 0.0
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    for _ in range(10):
        step()
    best = max(best, 10 * 128 / (time.perf_counter() - t))
print(json.dumps({"bench": "aten_cpu_capability", "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY"),
                  "threads": int(sys.argv[1]), "best_samples_per_sec": best}))
"""


def probe(capability, threads, trials, weights_file):
    """One JSON record for one capability, run in a fresh interpreter: kernels
    this CPU cannot execute (SIGILL) are reported, not fatal."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(trials), weights_file], env=env,
                         capture_output=True, text=True)
    if out.returncode == 0:
        return json.loads(out.stdout.strip().splitlines()[-1])
    return {"bench": "aten_cpu_capability", "ATEN_CPU_CAPABILITY": capability, "threads": threads,
            "best_samples_per_sec": 0.0, "error": child_failure(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capabilities", default="default,avx2,avx512")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2, help="rounds over all capabilities (interleaved)")
    ap.add_argument("--pick", action="store_true",
                    help="print only the fastest correct capability (the records go to stderr)")
    args = ap.parse_args()
    import tempfile

    import torch
    caps = args.capabilities.split(",")
    # PyTorch ignores a name it does not know and uses its own pick.
    unknown = [c for c in caps if c not in ("default", "avx2", "avx512")]
    if unknown:
        sys.exit(f"pytorch_capability: unknown capabilities {unknown} (PyTorch 1.13 knows default, avx2, avx512)")
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        # The portable kernels first: the weights every other set must reproduce.
        ordered = ["default"] + [c for c in caps if c != "default"]
        for _ in range(args.rounds):
            for c in ordered:
                path = os.path.join(tmp, c + ".pt")
                r = probe(c, args.threads, args.trials, path)
                if "error" not in r:
                    ref = torch.load(os.path.join(tmp, "default.pt"))
                    got = torch.load(path)
                    err = max(float((got[k] - ref[k]).abs().max() / ref[k].abs().max()) for k in ref)
                    r["max_rel_difference_from_default"] = err
                    r["correct"] = err < 1e-4
                else:
                    r["correct"] = False
                # "default" runs as the reference even when not a candidate.
                report(r, best if c in caps else {}, c, "best_samples_per_sec", args.pick)
    if args.pick:
        print_pick(best, "pytorch_capability", "capability")


if __name__ == "__main__":
    main()
