#!/usr/bin/env python3
"""The GPU peer of the Strata GPU check's benchmark: PyTorch training-step
throughput on one GPU of the Fashion-MNIST MLP (784-256-128-10, ReLU) and of
the TF-tutorial CNN (conv 5x5 32 "same" ReLU, max-pool 2, conv 5x5 64 "same"
ReLU, max-pool 2, dense 1024 ReLU, dense 10), Adam 1e-3, cross-entropy from
logits; eager and with the whole step captured in a CUDA graph (PyTorch's
fastest configuration for a small model), float32 with TF32 off (as Strata's
default) and, with --tf32, on; cuDNN's autotuner on (its best algorithms).
One JSON line per (model, batch, mode, tf32).

  python3 bench/pytorch_gpu_peer.py --model mlp --batches 128,1024,8192 [--steps 300]
  python3 bench/pytorch_gpu_peer.py --model cnn --batches 64,256,1024 --tf32

Inputs are random tensors of Fashion-MNIST's shape already on the GPU: the
peer's step has no input pipeline at all, which favours it.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def make_model(name):
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def bench(name, batch, steps, graph, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = make_model(name).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=graph)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(5):
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=False)
        with torch.cuda.graph(g):
            step()
        run = g.replay
    else:
        for _ in range(10):
            step()
        run = step
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        run()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / steps
    return {"bench": "pytorch_gpu_peer", "model": name, "batch": batch, "mode": "graph" if graph else "eager",
            "tf32": tf32,
            "step_us": round(seconds * 1e6, 1), "samples_per_sec": round(batch / seconds),
            "max_memory_bytes": torch.cuda.max_memory_allocated(), "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--batches", default="128,1024,8192")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--tf32", action="store_true", help="also measure with TF32 on")
    args = p.parse_args()
    for b in (int(v) for v in args.batches.split(",")):
        for tf32 in ((False, True) if args.tf32 else (False,)):
            for graph in (False, True):
                torch.cuda.reset_peak_memory_stats()
                print(json.dumps(bench(args.model, b, args.steps, graph, tf32)), flush=True)


if __name__ == "__main__":
    main()
