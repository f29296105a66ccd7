#!/usr/bin/python3
"""The TensorFlow-tutorial CNN of resources/examples/fashion-cnn.strata in
PyTorch, for a side-by-side training throughput figure: Conv 5x5x32 'same' +
ReLU, MaxPool 2, Conv 5x5x64 'same' + ReLU, MaxPool 2, Dense 1024 + ReLU,
Dense 10; Adam 1e-3, cross-entropy from logits, batch 64, Fashion-MNIST in
memory. Prints one JSON line per repetition.

  /usr/bin/python3 bench/pytorch_cnn.py --threads 2 --steps 100
  build/app/strata-run resources/examples/fashion-cnn.strata --no-run-dir \
      --epochs 1 --max-steps 150 --threads 2 --events jsonl      # Strata, same work

PyTorch convolves with its bundled oneDNN; its dense layers (the 3136x1024
one is most of their work) use the BLAS, so run it with OpenBLAS and the
kernel set bench/pytorch_coretype.py --pick chooses, as run_cpu_comparison.sh
does. Denormals are flushed as Strata does.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

from pytorch_mlp import blas_info, load_fashion_mnist


def make_model(kind):
    nn = torch.nn
    if kind == "tutorial":
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))

    # resources/examples/fashion-cnn-bn.strata: Keras' BatchNormalization
    # defaults (momentum 0.99, epsilon 1e-3) in PyTorch's terms.
    def conv_bn(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout, eps=1e-3, momentum=0.01), nn.ReLU()]

    return nn.Sequential(
        *conv_bn(1, 32), *conv_bn(32, 32), nn.MaxPool2d(2), nn.Dropout(0.25),
        *conv_bn(32, 64), *conv_bn(64, 64), nn.MaxPool2d(2), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 256, bias=False), nn.BatchNorm1d(256, eps=1e-3, momentum=0.01), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(256, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model", choices=["tutorial", "bn"], default="tutorial",
                    help="tutorial: fashion-cnn.strata; bn: fashion-cnn-bn.strata")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    x, y = load_fashion_mnist()
    x = x.reshape(-1, 1, 28, 28)
    # Which peer ran: the BLAS of its dense layers, its OpenBLAS kernel set.
    info = blas_info()
    info.update({"bench": "pytorch_info", "torch": torch.__version__, "mkldnn": torch.backends.mkldnn.is_available()})
    print(json.dumps(info), flush=True)
    torch.manual_seed(0)
    model = make_model(args.model)
    # foreach: the multi-tensor Adam, PyTorch's fastest on CPU. Its CPU default
    # (PyTorch 1.13) is the per-parameter loop, ~3x slower on the MLP's step.
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    for rep in range(args.reps):
        perm = torch.randperm(x.shape[0])
        elapsed = 0.0
        for step in range(args.warmup + args.steps):
            idx = perm[(step * args.batch) % (x.shape[0] - args.batch):][:args.batch]
            t0 = time.perf_counter()
            xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            float(loss)
            if step >= args.warmup:
                elapsed += time.perf_counter() - t0
        print(json.dumps({"bench": "pytorch_cnn", "model": args.model, "threads": args.threads, "batch": args.batch, "rep": rep,
                          "samples_per_sec": args.steps * args.batch / elapsed, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
