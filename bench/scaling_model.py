#!/usr/bin/env python3
"""Scaling on paper: data-parallel step time = compute + ring all-reduce.

Weak scaling (a fixed batch per GPU, as in Horovod's benchmarks): one GPU
steps in `compute` seconds; n GPUs step in

    step(n)  = compute + comm(n) - hidden(n)
    comm(n)  = 2(n-1)/n * S / B  +  2(n-1) * alpha * buckets      (ring all-reduce)
    hidden   = min(overlap * comm(n), backward_share * compute)

S is the gradient size in bytes, B the bandwidth of the slowest link of the
ring (for GPUs spread over servers: one server's NIC, since a ring crosses
each NIC once in each direction), alpha the per-hop latency of one ring step,
buckets the number of separate all-reduces per step (fusion buffers; each pays
the 2(n-1) latency terms). `overlap` is the share of the all-reduce that runs
while the backward pass still computes; it can hide at most the backward
pass, taken as `backward_share` (2/3) of the compute time. Scaling efficiency
= step(1) / step(n) = throughput(n) / (n * throughput(1)).

Not modelled: hierarchical all-reduce (fast links inside a server; the flat
ring over the slowest link is pessimistic there), contention and congestion,
stragglers, the reduction's own memory/compute cost, input pipelines,
compression (fp16 gradients halve S).

Modes:
  scaling_model.py                      # ResNet-101 defaults, Horovod comparison
  scaling_model.py --strata [--events run.jsonl | --samples-per-sec X]
                                        # Strata's Fashion-MNIST MLP
  scaling_model.py --params 25.6e6 --compute 0.2 --bandwidths 25,100

Python 3 standard library only.
"""

import argparse
import json
import math
import sys

# ResNet-101 as in Horovod's 512-GPU benchmark (Horovod docs, "Benchmarks"):
# tf_cnn_benchmarks --model resnet101 --batch_size 64, 128 servers x 4 Pascal
# GPUs, RoCE-capable 25 Gbit/s network, 90 % scaling efficiency at 512 GPUs.
RESNET101_PARAMS = 44.5e6  # torchvision resnet101: 44,549,160 parameters
# Per-step compute at batch 64 on one Pascal GPU, estimated from the same
# page's example run: 16 GPUs, "total images/sec: 1656.82" = 103.6 images/s
# per GPU = 0.62 s per 64-image step, communication included; 0.6 s of it
# taken as compute. An estimate, not a measured single-GPU figure.
RESNET101_COMPUTE_S = 0.6
HOROVOD_EFFICIENCY = 0.90
HOROVOD_GPUS = 512
HOROVOD_GBIT = 25

# Strata's Fashion-MNIST MLP 784-256-128-10 (resources/examples/fashion-mlp.strata).
STRATA_MLP_PARAMS = 235_146
STRATA_MLP_BATCH = 128

FUSION_BYTES = 64 * 2**20  # Horovod's default fusion threshold (HOROVOD_FUSION_THRESHOLD)


def comm_seconds(n, grad_bytes, gbit, alpha_s, buckets):
    if n <= 1:
        return 0.0
    bw = gbit * 1e9 / 8  # bytes/s
    return 2 * (n - 1) / n * grad_bytes / bw + 2 * (n - 1) * alpha_s * buckets


def step_seconds(n, compute, grad_bytes, gbit, alpha_s, buckets, overlap, backward_share):
    c = comm_seconds(n, grad_bytes, gbit, alpha_s, buckets)
    hidden = min(overlap * c, backward_share * compute)
    return compute + c - hidden, c


def efficiency(n, a):
    step, _ = step_seconds(n, a.compute, a.grad_bytes, a.gbit_now, a.alpha_s, a.buckets, a.overlap, a.backward_share)
    return a.compute / step


def overlap_needed(n, gbit, target, a):
    """Smallest overlap share reaching `target` at this bandwidth, or None."""
    c = comm_seconds(n, a.grad_bytes, gbit, a.alpha_s, a.buckets)
    allowed = a.compute * (1 / target - 1)  # visible communication allowed
    if c <= allowed:
        return 0.0
    need_hidden = c - allowed
    if need_hidden > a.backward_share * a.compute:
        return None  # more than the backward pass can hide
    return need_hidden / c


def gbit_needed(n, overlap, target, a):
    """Smallest link bandwidth (Gbit/s) reaching `target` with this overlap, or None."""
    allowed = a.compute * (1 / target - 1)
    latency = 2 * (n - 1) * a.alpha_s * a.buckets
    cap = a.backward_share * a.compute
    # visible(c) = c - min(overlap*c, cap) grows with c: find the largest c
    # with visible(c) <= allowed. Below c1 = cap/overlap the hidden part is
    # overlap*c, above it the whole backward pass.
    c1 = cap / overlap if overlap > 0 else math.inf
    if overlap < 1 and allowed <= (1 - overlap) * c1:
        c_max = allowed / (1 - overlap)
    else:
        c_max = allowed + cap
    if c_max <= latency:
        return None
    return 2 * (n - 1) / n * a.grad_bytes / (c_max - latency) * 8 / 1e9


def batch_factor_needed(n, gbit, target, a):
    """Smallest factor k on the per-GPU batch (compute k*compute, same gradient) reaching `target`."""
    def eff(k):
        step, _ = step_seconds(n, k * a.compute, a.grad_bytes, gbit, a.alpha_s, a.buckets, a.overlap,
                               a.backward_share)
        return k * a.compute / step
    if eff(1.0) >= target:
        return 1.0
    lo, hi = 1.0, 2.0
    while eff(hi) < target:
        lo, hi = hi, hi * 2
        if hi > 1e9:
            return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if eff(mid) >= target else (mid, hi)
    return hi


def strata_samples_per_sec(path):
    """samples_per_sec of the last step event of the first epoch of a strata-run --events jsonl stream."""
    last = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            # A step's samples_per_sec counts from the start of its epoch.
            if ev.get("type") == "step" and "samples_per_sec" in ev:
                last = ev["samples_per_sec"]
            if ev.get("type") == "epoch" and last is not None:
                break
    if last is None:
        raise SystemExit(f"scaling_model: no samples_per_sec in {path}")
    return float(last)


def parse_list(s, f):
    return [f(x) for x in s.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", action="store_true", help="Strata's Fashion-MNIST MLP instead of ResNet-101")
    ap.add_argument("--events", help="--strata: strata-run --events jsonl output to read samples_per_sec from")
    ap.add_argument("--samples-per-sec", type=float, help="--strata: one worker's measured samples/s")
    ap.add_argument("--batch", type=int, help="per-GPU batch (ResNet-101: 64; --strata: 128)")
    ap.add_argument("--params", type=float, help="parameters (ResNet-101: 44.5e6; --strata: 235146)")
    ap.add_argument("--bytes-per-param", type=float, default=4, help="4 (fp32, default) or 2 (fp16 gradients)")
    ap.add_argument("--grad-bytes", type=float, help="gradient bytes per step (overrides --params)")
    ap.add_argument("--compute", type=float, help="compute seconds per step on one GPU (ResNet-101: 0.6)")
    ap.add_argument("--gpus", default="8,16,32,64,128,256,512")
    ap.add_argument("--bandwidths", default="10,25,100,200", help="link bandwidths, Gbit/s")
    ap.add_argument("--latency-us", type=float, default=5.0,
                    help="per-hop latency of one ring step, microseconds (default 5: RDMA-class)")
    ap.add_argument("--buckets", type=int, help="all-reduces per step (default: gradient bytes / 64 MiB, rounded up)")
    ap.add_argument("--overlap", type=float, default=0.0, help="share of the all-reduce hidden behind backward (0..1)")
    ap.add_argument("--backward-share", type=float, default=2 / 3, help="backward pass share of compute")
    ap.add_argument("--target", type=float, default=HOROVOD_EFFICIENCY, help="efficiency to solve for")
    ap.add_argument("--json", action="store_true", help="also print one JSON line per (gpus, bandwidth)")
    a = ap.parse_args()

    if a.strata:
        a.batch = a.batch or STRATA_MLP_BATCH
        params = a.params or STRATA_MLP_PARAMS
        if a.compute is None:
            sps = a.samples_per_sec or (strata_samples_per_sec(a.events) if a.events else None)
            if sps is None:
                raise SystemExit("scaling_model --strata: give --events FILE, --samples-per-sec X or --compute S")
            a.compute = a.batch / sps
            a.source = f"measured {sps:,.0f} samples/s at batch {a.batch} -> {a.compute * 1e3:.3f} ms/step"
        else:
            a.source = f"compute {a.compute * 1e3:.3f} ms/step (given)"
        title = "Strata Fashion-MNIST MLP 784-256-128-10"
    else:
        a.batch = a.batch or 64
        params = a.params or RESNET101_PARAMS
        if a.compute is None:
            a.compute = RESNET101_COMPUTE_S
            a.source = "compute 0.6 s/step: Pascal GPU at batch 64, estimated from Horovod's example run"
        else:
            a.source = f"compute {a.compute:.3f} s/step (given)"
        title = "ResNet-101"
    a.grad_bytes = a.grad_bytes or params * a.bytes_per_param
    a.buckets = a.buckets or max(1, math.ceil(a.grad_bytes / FUSION_BYTES))
    a.alpha_s = a.latency_us * 1e-6
    gpus = parse_list(a.gpus, int)
    gbits = parse_list(a.bandwidths, float)

    print(f"# {title}: {a.grad_bytes / 1e6:.3f} MB of gradients per step, batch {a.batch} per GPU")
    print(f"# {a.source}")
    print(f"# ring all-reduce, latency {a.latency_us:g} us per hop, {a.buckets} bucket(s) per step, "
          f"overlap {a.overlap:.0%} (capped at the backward pass = {a.backward_share:.0%} of compute)")
    print()
    print("Scaling efficiency (all-reduce ms per step in brackets)")
    head = f"{'GPUs':>6} |" + "".join(f" {g:>6g} Gbit/s      |" for g in gbits)
    print(head)
    print("-" * len(head))
    for n in gpus:
        cells = []
        for g in gbits:
            a.gbit_now = g
            step, c = step_seconds(n, a.compute, a.grad_bytes, g, a.alpha_s, a.buckets, a.overlap, a.backward_share)
            e = a.compute / step
            cells.append(f" {e * 100:6.1f} % ({c * 1e3:7.2f}) |")
        print(f"{n:>6} |" + "".join(cells))
    if a.json:
        for n in gpus:
            for g in gbits:
                step, c = step_seconds(n, a.compute, a.grad_bytes, g, a.alpha_s, a.buckets, a.overlap,
                                       a.backward_share)
                print(json.dumps({"bench": "scaling_model", "model": title, "gpus": n, "gbit": g,
                                  "compute_s": a.compute, "grad_bytes": a.grad_bytes, "allreduce_s": c,
                                  "step_s": step, "efficiency": a.compute / step, "overlap": a.overlap,
                                  "latency_us": a.latency_us, "buckets": a.buckets}))

    print()
    print(f"Largest GPU count of the table at {a.target:.0%} or better:")
    for g in gbits:
        a.gbit_now = g
        ok = [m for m in gpus if efficiency(m, a) >= a.target]
        print(f"  at {g:g} Gbit/s: {max(ok) if ok else 'none'}")

    n = gpus[-1]
    print()
    print(f"To reach {a.target:.0%} at {n} GPUs:")
    for g in gbits:
        f = overlap_needed(n, g, a.target, a)
        txt = ("not reachable by overlap alone" if f is None else "no overlap needed" if f == 0 else
               f"overlap >= {f:.0%}")
        print(f"  at {g:g} Gbit/s: {txt}")
    for g in gbits:
        k = batch_factor_needed(n, g, a.target, a)
        print(f"  at {g:g} Gbit/s, overlap {a.overlap:.0%}: per-GPU batch >= "
              f"{math.ceil(k * a.batch) if k else '?'} (compute assumed proportional to batch)")
    for ov in sorted({0.0, a.overlap, 0.5, 0.9}):
        need = gbit_needed(n, ov, a.target, a)
        txt = "not reachable (latency alone is too much)" if need is None else f"link >= {need:.1f} Gbit/s"
        print(f"  with overlap {ov:.0%}: {txt}")
    if not a.strata:
        a.gbit_now = HOROVOD_GBIT
        e = efficiency(HOROVOD_GPUS, a)
        print()
        print(f"Horovod (Sergeev & Del Balso 2018; Horovod docs): {HOROVOD_EFFICIENCY:.0%} at {HOROVOD_GPUS} GPUs, "
              f"{HOROVOD_GBIT} Gbit/s RoCE, 4 GPUs per server.")
        print(f"This model at {HOROVOD_GPUS} GPUs, {HOROVOD_GBIT} Gbit/s, overlap {a.overlap:.0%}: {e:.1%}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
