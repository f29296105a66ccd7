#!/usr/bin/env python3
"""Differential tests: Strata's layers, losses and optimizers against PyTorch.

For every case the engine runs through `strata-probe` (float32) and the
reference (reference.py) in float64 on the same inputs and weights; inputs are
random and chosen away from kinks (no pre-activation of a ReLU within 1e-3 of
0, no max-pooling window whose two largest values are within 1e-3), so two
correct implementations must agree to float32 rounding. Compared: the output,
the objective, the gradients with respect to the input and every trainable
variable, batch norm's moving statistics, and the variables after optimizer
steps. The difference reported is max|strata - reference| / max|reference|
per tensor, worst over a case's tensors.

  test_vs_torch.py PROBE [--only SUBSTRING] [--device gpu:0|sim:0] [--no-trajectories] [--fashion-mnist DIR]

Prints one line per case and exits 1 if any case exceeds its tolerance.
"""
import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports the test as skipped, with the reason
    print(f"skipped: {e} (Debian: apt-get install python3-torch; ./bootstrap.sh test installs it)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402

TOL = 1e-5  # relative, float32 engine against float64 reference
RNG = np.random.default_rng(20261201)


DEVICE = None  # --device: the engine runs the cases there (a GPU, or sim:0)


def probe(binary, case):
    # The model's description (its variables' names and shapes) is the same
    # on every device: only the run goes to the device under test, which
    # halves the processes that open a GPU (each pays for its libraries).
    if DEVICE and not case.get("describe"):
        case = dict(case, device=DEVICE)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(case, f)
        path = f.name
    try:
        r = subprocess.run([binary, path], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        raise RuntimeError(f"strata-probe failed (exit {r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def rel(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return math.inf
    scale = max(np.abs(b).max(initial=0.0), 1e-30)
    return float(np.abs(a - b).max(initial=0.0) / scale)


def t64(values, shape):
    return torch.tensor(np.asarray(values, dtype=np.float64).reshape(shape), dtype=ref.DT)


def random_weights(variables, spec_of):
    """Weights away from the initialisers' zeros: biases and betas non-zero too."""
    out = {}
    for v in variables:
        shape, name = v["shape"], v["name"]
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        if name.endswith("moving_variance") or name.endswith("gamma"):
            w = RNG.uniform(0.5, 1.5, shape)
        elif name.endswith("moving_mean") or name.endswith("beta") or name.endswith("bias"):
            w = RNG.uniform(-0.3, 0.3, shape)
        else:
            w = RNG.uniform(-1, 1, shape) * math.sqrt(3.0 / fan_in)
        out[name] = w.astype(np.float32).astype(np.float64)  # what float32 holds
    return out


def away_from_kinks(model):
    for kind, z in model.pre_activation:
        if kind == "relu" and z.detach().abs().min().item() < 1e-3:
            return False
    return True


def max_pool_ties(layers, x):
    """Whether a max-pooling window's two largest values are within 1e-3 (first layer only)."""
    if not layers or layers[0]["type"] != "max_pool2d":
        return False
    k = ref.pair(layers[0].get("pool_size"), 2)
    s = ref.pair(layers[0].get("strides") or None, 0)
    s = k if s == (0, 0) else s
    xc = ref.pad_nchw(torch.tensor(x).permute(0, 3, 1, 2), k, s, layers[0].get("padding", "valid"), -math.inf)
    patches = xc.unfold(2, k[0], s[0]).unfold(3, k[1], s[1]).reshape(*xc.shape[:2], -1, k[0] * k[1])
    top = torch.topk(patches, 2, dim=-1).values if k[0] * k[1] > 1 else None
    return top is not None and bool(((top[..., 0] - top[..., 1]) < 1e-3).any())


def run_case(binary, name, layers, example, batch=4, training=True, objective=None, optimizer=None, tol=TOL,
             x_range=(-1.0, 1.0), batches=None):
    described = probe(binary, {"describe": True, "layers": layers, "example_shape": example})
    for attempt in range(20):
        weights = random_weights(described["variables"], None)
        x = RNG.uniform(*x_range, [batch] + example).astype(np.float32).astype(np.float64)
        w64 = {k: torch.tensor(v, dtype=ref.DT, requires_grad=True) for k, v in weights.items()}
        model = ref.Model(layers, w64)
        xt = torch.tensor(x, dtype=ref.DT, requires_grad=True)
        with torch.no_grad():
            y0 = model(xt, training, dropout_masks={n: torch.ones(1, dtype=ref.DT) for n in model.names})
        if away_from_kinks(model) and not max_pool_ties(layers, x):
            break
    obj = objective or {"kind": "cotangent", "r": RNG.uniform(-1, 1, list(y0.shape)).ravel().tolist()}
    case = {"layers": layers, "example_shape": example, "batch": batch, "x": x.ravel().tolist(), "training": training,
            "weights": {k: v.ravel().tolist() for k, v in weights.items()}, "objective": obj}
    if optimizer:
        case["optimizer"] = optimizer
    if batches:
        case["batches"] = batches
    got = probe(binary, case)

    masks = {}
    for spec, n in zip(layers, model.names):
        if spec["type"] == "dropout" and training:
            # Strata draws its own mask (counter-based RNG): read it from the
            # output, check its form, and give the reference the same mask.
            ys = np.asarray(got["y"]["data"]).reshape(x.shape)
            m = ys * (1 - spec["rate"]) / x
            assert np.all((np.abs(m) < 1e-6) | (np.abs(m - 1) < 1e-5)), "dropout: output is not x * mask / (1 - rate)"
            masks[n] = torch.tensor(np.round(m), dtype=ref.DT)
    y = model(xt, training, dropout_masks=masks)
    if obj["kind"] == "loss":
        value = ref.loss_value(obj, y)
    else:
        value = (y * t64(obj["r"], y.shape)).sum()
    trainable = [v["name"] for v in described["variables"] if v["trainable"]]
    grads = torch.autograd.grad(value, [xt] + [w64[n] for n in trainable], allow_unused=True)
    worst = {"y": rel(got["y"]["data"], y.detach().numpy()), "dx": rel(got["dx"], grads[0].numpy())}
    if obj["kind"] == "loss":  # (a cotangent's contraction is the probe's, not the engine's)
        worst["loss"] = rel([got["objective"]], [value.item()])
    for n, g in zip(trainable, grads[1:]):
        worst["d " + n] = rel(got["grads"][n], (g if g is not None else torch.zeros_like(w64[n])).numpy())
    for n, v in model.new_state.items():
        worst[n] = rel(got["state"][n], v.detach().numpy())
    if optimizer:
        reference = trajectory(layers, weights, x, xt.shape, obj, optimizer, training, batches, trainable)
        worst.update(trajectory_error(got, reference, trainable))
    if tol is None:
        # A trajectory: float32 rounding grows over the steps (and flips
        # ReLU and max-pool decisions at kinks), so the bound is what it does
        # to PyTorch's own float32 run of the same steps against float64:
        # Strata may drift at most 4x as far. One float32 run is one draw of
        # a chaotic process (on the batch-norm CNN, runs differing only in
        # rounding drift 10x apart), so PyTorch's drift is the larger of two
        # float32 runs: the batches as given and each batch's examples in
        # reverse order (the same steps in exact arithmetic: every sum over
        # the batch, batch-norm statistics included, rounds another way).
        drift = 0.0
        for order in (batches, [{"x": np.asarray(b["x"]).reshape(xt.shape)[::-1].ravel().tolist(),
                                 "labels": b["labels"][::-1]} for b in batches]):
            f32 = trajectory(layers, weights, x, xt.shape, obj, optimizer, training, order, trainable,
                             dtype=torch.float32)
            drift = max(drift, max(trajectory_error(f32, reference, trainable).values()))
        tol = max(1e-6, 4 * drift)
        name += f" (PyTorch float32 drifts {drift:.1e})"
        worst = {k: v for k, v in worst.items() if k.startswith("after") or k == "losses"}
    key = max(worst, key=worst.get)
    return name, worst[key], key, tol


def trajectory(layers, weights, x, shape, obj, opt, training, batches, trainable, dtype=ref.DT):
    """The reference's losses and trainable variables after the optimizer's
    steps, in `dtype` (float32: what float32 rounding alone does to them)."""
    w = {k: torch.tensor(v, dtype=dtype, requires_grad=k in trainable) for k, v in weights.items()}
    model = ref.Model(layers, w)
    params = [w[n] for n in trainable]
    if opt["type"] == "sgd":
        sgd = torch.optim.SGD(params, lr=opt["learning_rate"], momentum=opt.get("momentum", 0.0),
                              nesterov=opt.get("nesterov", False))
    state = {}
    losses = []
    for step in range(opt["steps"]):
        xs, o = x, obj
        if batches:
            b = batches[step % len(batches)]
            xs = np.asarray(b["x"], dtype=np.float64).reshape(shape)
            o = dict(obj, labels=b["labels"])
        y = model(torch.tensor(xs, dtype=dtype), training)
        loss = ref.loss_value(o, y)
        losses.append(loss.item())
        g = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for n, v in model.new_state.items():
                w[n].copy_(v)
            if opt["type"] == "sgd":
                for p, gi in zip(params, g):
                    p.grad = gi
                sgd.step()
            else:
                ref.keras_adam(params, g, state, opt["learning_rate"], opt.get("beta_1", 0.9), opt.get("beta_2", 0.999),
                               opt.get("epsilon", 1e-7))
    return {"losses": losses, "after": {n: w[n].detach().numpy() for n in trainable}}


def trajectory_error(got, reference, trainable):
    """The worst relative errors of a trajectory (Strata's, or the reference's
    in float32) against the reference's."""
    out = {"losses": rel(got["losses"], reference["losses"])}
    for n in trainable:
        out["after " + n] = rel(got["after"][n], reference["after"][n])
    return out


def layer_cases():
    """(name, layers, example shape, options) for every layer type and option."""
    cases = []
    for act in (None, "relu", "tanh", "sigmoid", "softmax"):
        for bias in (True, False):
            cases.append((f"dense 13->7 {act or 'linear'} bias={bias}",
                          [{"type": "dense", "units": 7, "activation": act or "linear", "use_bias": bias}], [13], {}))
    cases.append(("dense 784->64 relu", [{"type": "dense", "units": 64, "activation": "relu"}], [784], {"batch": 8}))
    for k, s, pad in ((3, 1, "same"), (3, 1, "valid"), (4, 1, "same"), (4, 2, "same"), (2, 2, "same"), (5, 2, "valid"),
                      (5, 1, "same"), (3, 2, "valid"), ((2, 3), (1, 2), "same")):
        cases.append((f"conv2d k={k} s={s} {pad}",
                      [{"type": "conv2d", "filters": 4, "kernel_size": k, "strides": s, "padding": pad}], [9, 8, 3], {}))
    cases.append(("conv2d 32 filters 5x5 same relu (the examples')",
                  [{"type": "conv2d", "filters": 32, "kernel_size": 5, "padding": "same", "activation": "relu"}],
                  [28, 28, 1], {"batch": 2}))
    cases.append(("conv2d 32->64 5x5 same tanh (the examples')",
                  [{"type": "conv2d", "filters": 64, "kernel_size": 5, "padding": "same", "activation": "tanh"}],
                  [14, 14, 32], {"batch": 2}))
    cases.append(("conv2d 3x3 no bias sigmoid",
                  [{"type": "conv2d", "filters": 5, "kernel_size": 3, "use_bias": False, "activation": "sigmoid"}],
                  [7, 7, 2], {}))
    for kind in ("max_pool2d", "average_pool2d"):
        for p, s, pad in ((2, None, "valid"), (2, None, "same"), (3, 2, "same"), (3, 1, "valid"), (2, 1, "same"),
                          (3, None, "same")):
            spec = {"type": kind, "pool_size": p, "padding": pad}
            if s:
                spec["strides"] = s
            cases.append((f"{kind} {p} s={s or p} {pad}", [spec], [7, 9, 3], {}))
    cases.append(("global_average_pooling2d", [{"type": "global_average_pooling2d"}], [5, 6, 4], {}))
    for training in (True, False):
        for center, scale in ((True, True), (False, True), (True, False)):
            cases.append((f"batch_normalization 4-D training={training} center={center} scale={scale}",
                          [{"type": "batch_normalization", "momentum": 0.9, "center": center, "scale": scale}],
                          [5, 4, 3], {"batch": 6, "training": training}))
        cases.append((f"batch_normalization 2-D training={training}",
                      [{"type": "batch_normalization", "epsilon": 0.01}], [10], {"batch": 8, "training": training}))
    cases.append(("dropout 0.3 training", [{"type": "dropout", "rate": 0.3}], [40], {"batch": 8, "x_range": (0.5, 1.5)}))
    cases.append(("dropout 0.3 inference", [{"type": "dropout", "rate": 0.3}], [40], {"training": False}))
    cases.append(("flatten", [{"type": "flatten"}], [3, 4, 2], {}))
    cases.append(("reshape", [{"type": "reshape", "target_shape": [4, 6]}], [24], {}))
    for a in ("relu", "tanh", "sigmoid", "softmax"):
        cases.append((f"{a} layer", [{"type": a}], [11], {}))
    return cases


def loss_cases():
    head = [{"type": "dense", "units": 5}]
    probs = head + [{"type": "softmax"}]
    labels = RNG.integers(0, 5, 6).tolist()
    soft = RNG.dirichlet(np.ones(5), 6)
    cases = []
    for red in ("mean", "sum"):
        cases.append((f"sparse_categorical_crossentropy from_logits {red}", head,
                      {"kind": "loss", "type": "sparse_categorical_crossentropy", "from_logits": True, "reduction": red, "labels": labels}))
        cases.append((f"sparse_categorical_crossentropy probabilities {red}", probs,
                      {"kind": "loss", "type": "sparse_categorical_crossentropy", "from_logits": False, "reduction": red, "labels": labels}))
        cases.append((f"categorical_crossentropy from_logits {red}", head,
                      {"kind": "loss", "type": "categorical_crossentropy", "from_logits": True, "reduction": red, "targets": soft.ravel().tolist()}))
        cases.append((f"categorical_crossentropy probabilities {red}", probs,
                      {"kind": "loss", "type": "categorical_crossentropy", "from_logits": False, "reduction": red, "targets": soft.ravel().tolist()}))
        cases.append((f"mean_squared_error {red}", head,
                      {"kind": "loss", "type": "mean_squared_error", "reduction": red, "targets": RNG.uniform(-1, 1, 30).tolist()}))
    return cases


def optimizer_cases():
    model = [{"type": "dense", "units": 8, "activation": "tanh"}, {"type": "dense", "units": 4}]
    return [("SGD", {"type": "sgd", "learning_rate": 0.1, "steps": 10}),
            ("SGD momentum 0.9", {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "steps": 10}),
            ("SGD momentum 0.9 Nesterov", {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "nesterov": True, "steps": 10}),
            ("Adam (Keras epsilon)", {"type": "adam", "learning_rate": 0.01, "steps": 10}),
            ("Adam beta 0.8/0.99 epsilon 1e-4", {"type": "adam", "learning_rate": 0.02, "beta_1": 0.8, "beta_2": 0.99,
                                                 "epsilon": 1e-4, "steps": 10})], model


def load_fashion(directory, n):
    def read(name, offset):
        with gzip.open(os.path.join(directory, name), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    x = read("train-images-idx3-ubyte.gz", 16)[: n * 784].reshape(n, 28, 28, 1).astype(np.float32) / 255.0
    y = read("train-labels-idx1-ubyte.gz", 8)[:n].astype(int)
    return x, y


def trajectory_cases(source_dir, fashion):
    """The example projects' models for tens of SGD steps on real images."""
    out = []
    if not fashion or not os.path.exists(os.path.join(fashion, "train-images-idx3-ubyte.gz")):
        print("trajectories skipped: Fashion-MNIST not found", flush=True)
        return out
    x, y = load_fashion(fashion, 8 * 20)
    batches = [{"x": x[i * 8:(i + 1) * 8].ravel().tolist(), "labels": y[i * 8:(i + 1) * 8].tolist()} for i in range(20)]
    for project in ("fashion-mlp", "fashion-cnn", "fashion-cnn-bn"):
        path = os.path.join(source_dir, "resources", "examples", project + ".strata")
        if not os.path.exists(path):
            continue
        layers = json.load(open(path))["model"]["layers"]
        smooth = [dict(l, activation="tanh") if l.get("activation") == "relu" else
                  (dict(type="average_pool2d", **{k: v for k, v in l.items() if k != "type"}) if l["type"] == "max_pool2d" else
                   ({"type": "tanh"} if l["type"] == "relu" else l)) for l in layers]
        smooth = [l for l in smooth if l["type"] != "dropout"]  # its mask is Strata's own draw
        out.append((f"{project} (tanh, average pooling) 20 SGD steps", smooth, batches, None))
        out.append((f"{project} as it is, 20 SGD steps", [l for l in layers if l["type"] != "dropout"], batches, None))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("--only", default="")
    ap.add_argument("--device", default=None, help="run the engine's side on this device (gpu:0, sim:0)")
    ap.add_argument("--no-trajectories", action="store_true")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--fashion-mnist", default=os.environ.get("STRATA_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    torch.set_num_threads(1)
    # The cases one at a time, each run and printed as it comes, so a run cut
    # short (a time limit) keeps what it did. A generator, so the random
    # draws of each part happen after the cases before it ran, in the order
    # the inputs were always drawn in.
    def cases():
        for name, layers, example, opts in layer_cases():
            yield name, lambda: run_case(a.probe, name, layers, example, **opts)
        for name, layers, objective in loss_cases():
            yield "loss " + name, lambda: run_case(a.probe, "loss " + name, layers, [9], batch=6, objective=objective)
        opt_cases, model = optimizer_cases()
        labels = RNG.integers(0, 4, 8).tolist()
        obj = {"kind": "loss", "type": "sparse_categorical_crossentropy", "from_logits": True, "reduction": "mean",
               "labels": labels}
        for name, opt in opt_cases:
            yield "optimizer " + name, lambda: run_case(a.probe, "optimizer " + name, model, [6], batch=8, objective=obj,
                                                        optimizer=opt)
        for name, layers, batches, tol in ([] if a.no_trajectories else trajectory_cases(a.source, a.fashion_mnist)):
            traj = {"kind": "loss", "type": "sparse_categorical_crossentropy", "from_logits": True, "reduction": "mean",
                    "labels": batches[0]["labels"]}
            yield "trajectory " + name, lambda: run_case(a.probe, "trajectory " + name, layers, [28, 28, 1], batch=8,
                                                         objective=traj,
                                                         optimizer={"type": "sgd", "learning_rate": 0.01, "steps": 20},
                                                         tol=tol, x_range=(0.0, 1.0), batches=batches)

    failed = 0
    results = []
    width = 64
    for name, run in cases():
        if a.only not in name:
            continue
        try:
            name, worst, where, tol = run()
        except Exception as e:  # the probe failed or crashed: this case fails, the others still run
            worst, where, tol = math.inf, f"error: {e}", 0.0
        results.append((name, worst, where, tol))
        ok = worst <= tol
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:<{width}}  worst {worst:.2e} ({where}), tolerance {tol:.0e}", flush=True)
    print(f"{len(results) - failed} of {len(results)} cases within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
