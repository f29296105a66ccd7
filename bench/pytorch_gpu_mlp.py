#!/usr/bin/env python3
"""The GPU peer of the Strata GPU check's benchmark: PyTorch training-step
throughput of the Fashion-MNIST MLP (784-256-128-10, ReLU, Adam 1e-3,
cross-entropy from logits) on one GPU, eager and with the whole step captured
in a CUDA graph (PyTorch's fastest configuration for a small model), float32
with TF32 off (as Strata's default). One JSON line per (batch, mode).

  python3 bench/pytorch_gpu_mlp.py --batches 128,1024,8192 [--steps 300]

Inputs are random tensors of Fashion-MNIST's shape already on the GPU: the
peer's step has no input pipeline at all, which favours it.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def bench(batch, steps, graph):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = make_model().to(dev)
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
    return {"bench": "pytorch_gpu_mlp", "batch": batch, "mode": "graph" if graph else "eager",
            "step_us": round(seconds * 1e6, 1), "samples_per_sec": round(batch / seconds),
            "max_memory_bytes": torch.cuda.max_memory_allocated(), "gpu": torch.cuda.get_device_name(0),
            "torch": torch.__version__}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", default="128,1024,8192")
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    for b in (int(v) for v in args.batches.split(",")):
        for graph in (False, True):
            torch.cuda.reset_peak_memory_stats()
            print(json.dumps(bench(b, args.steps, graph)), flush=True)


if __name__ == "__main__":
    main()
