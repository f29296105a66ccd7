"""PyTorch (float64) versions of Strata's layers, losses and optimizers, written
from TensorFlow/Keras' documented semantics wherever they differ from PyTorch's.

Tensors are NHWC as in Strata; kernels HWIO (conv) and (in, out) (dense).
TensorFlow semantics that PyTorch does not share, and how they are followed:
- 'same' padding pads total = max((ceil(in/s) - 1) * s + k - in, 0), the extra
  pixel AFTER (bottom/right) when the total is odd (tf.nn.conv2d docs);
- average pooling with 'same' padding averages only the real pixels of a
  window (TF excludes the padding from the count);
- batch normalisation: normalises with the biased batch variance; the moving
  statistics are updated as moving = moving * momentum + batch * (1 - momentum)
  with the biased variance (Keras' BatchNormalization; PyTorch's momentum is
  1 - Keras' and it updates with the unbiased variance);
- Adam: Keras' formulation, lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t) and
  w -= lr_t * m / (sqrt(v) + epsilon) ("epsilon hat"; torch.optim.Adam adds
  epsilon to the bias-corrected sqrt(v_hat));
- SGD with momentum: Keras' v = m v - lr g, w += v (Nesterov: w += m v - lr g),
  which torch.optim.SGD computes in another arrangement (the same numbers for
  a constant learning rate), so torch.optim.SGD serves as the reference;
- losses from_logits=False clip probabilities to [1e-7, 1 - 1e-7] (Keras).
"""
import math

import torch
import torch.nn.functional as F

DT = torch.float64


def act(name, z):
    if name in (None, "linear", "none"):
        return z
    return {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
            "softmax": lambda t: torch.softmax(t, dim=-1)}[name](z)


def pair(v, default):
    if v is None:
        return (default, default)
    return (v, v) if isinstance(v, int) else tuple(v)


def same_pad(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def pad_nchw(x, k, s, padding, value=0.0):
    if padding != "same":
        return x
    top, bottom = same_pad(x.shape[2], k[0], s[0])
    left, right = same_pad(x.shape[3], k[1], s[1])
    return F.pad(x, (left, right, top, bottom), value=value)


class Model:
    """The layers of a Strata model spec, with their variables by Strata name."""

    def __init__(self, layers, weights):
        self.layers = layers
        self.w = weights  # name -> float64 tensor (requires_grad for trainable ones)
        self.names = []
        seen = {}
        for spec in layers:  # Keras-style names: dense, dense_1, ...
            t = spec["type"]
            n = seen.get(t, 0)
            seen[t] = n + 1
            self.names.append(t if n == 0 else f"{t}_{n}")
        self.pre_activation = []  # what each activation was applied to (kink checks)

    def var(self, layer, name):
        return self.w.get(f"{layer}/{name}")

    def __call__(self, x, training, dropout_masks=None):
        self.pre_activation = []
        self.new_state = {}
        for spec, name in zip(self.layers, self.names):
            t = spec["type"]
            if t == "dense":
                z = x @ self.var(name, "kernel")
                if spec.get("use_bias", True):
                    z = z + self.var(name, "bias")
                self.pre_activation.append((spec.get("activation"), z))
                x = act(spec.get("activation"), z)
            elif t == "conv2d":
                k, s = pair(spec["kernel_size"], 1), pair(spec.get("strides"), 1)
                xc = pad_nchw(x.permute(0, 3, 1, 2), k, s, spec.get("padding", "valid"))
                kern = self.var(name, "kernel").permute(3, 2, 0, 1)
                z = F.conv2d(xc, kern, stride=s).permute(0, 2, 3, 1)
                if spec.get("use_bias", True):
                    z = z + self.var(name, "bias")
                self.pre_activation.append((spec.get("activation"), z))
                x = act(spec.get("activation"), z)
            elif t in ("max_pool2d", "average_pool2d"):
                k = pair(spec.get("pool_size"), 2)
                s = pair(spec.get("strides") or None, 0)
                s = k if s == (0, 0) else s
                padding = spec.get("padding", "valid")
                xc = x.permute(0, 3, 1, 2)
                if t == "max_pool2d":
                    y = F.max_pool2d(pad_nchw(xc, k, s, padding, -math.inf), k, s)
                else:
                    total = F.avg_pool2d(pad_nchw(xc, k, s, padding), k, s) * (k[0] * k[1])
                    count = F.avg_pool2d(pad_nchw(torch.ones_like(xc), k, s, padding), k, s) * (k[0] * k[1])
                    y = total / count
                x = y.permute(0, 2, 3, 1)
            elif t == "global_average_pooling2d":
                x = x.mean(dim=(1, 2))
            elif t == "batch_normalization":
                axes = tuple(range(x.dim() - 1))
                eps, mom = spec.get("epsilon", 1e-3), spec.get("momentum", 0.99)
                mm, mv = self.var(name, "moving_mean"), self.var(name, "moving_variance")
                if training:
                    mean = x.mean(dim=axes)
                    var = ((x - mean) ** 2).mean(dim=axes)
                    self.new_state[f"{name}/moving_mean"] = mm * mom + mean.detach() * (1 - mom)
                    self.new_state[f"{name}/moving_variance"] = mv * mom + var.detach() * (1 - mom)
                else:
                    mean, var = mm, mv
                y = (x - mean) / torch.sqrt(var + eps)
                if spec.get("scale", True):
                    y = y * self.var(name, "gamma")
                if spec.get("center", True):
                    y = y + self.var(name, "beta")
                x = y
            elif t == "flatten":
                x = x.reshape(x.shape[0], -1)
            elif t == "reshape":
                x = x.reshape(x.shape[0], *spec["target_shape"])
            elif t == "dropout":
                if training:
                    x = x * dropout_masks[name] / (1 - spec["rate"])
            elif t in ("relu", "tanh", "sigmoid", "softmax"):
                self.pre_activation.append((t, x))
                x = act(t, x)
            else:
                raise ValueError(f"no reference for layer type {t}")
        return x


def loss_value(objective, y):
    kind = objective["type"]
    reduce = torch.mean if objective.get("reduction", "mean") == "mean" else torch.sum
    logits = objective.get("from_logits", False)
    if kind == "mean_squared_error":
        t = torch.tensor(objective["targets"], dtype=y.dtype).reshape(y.shape)
        return reduce(((t - y) ** 2).mean(dim=-1))
    if kind == "sparse_categorical_crossentropy":
        t = F.one_hot(torch.tensor(objective["labels"]), y.shape[-1]).to(y.dtype)
    else:
        t = torch.tensor(objective["targets"], dtype=y.dtype).reshape(y.shape)
    if logits:
        logp = torch.log_softmax(y, dim=-1)
    else:
        p = y / y.sum(dim=-1, keepdim=True)  # Keras rescales probabilities to sum to 1
        logp = torch.log(torch.clamp(p, 1e-7, 1 - 1e-7))
    return reduce(-(t * logp).sum(dim=-1))


def keras_adam(params, grads, state, lr, b1, b2, eps):
    state["t"] = state.get("t", 0) + 1
    t = state["t"]
    lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for i, (p, g) in enumerate(zip(params, grads)):
        m = state.setdefault(("m", i), torch.zeros_like(p))
        v = state.setdefault(("v", i), torch.zeros_like(p))
        m += (g - m) * (1 - b1)
        v += (g * g - v) * (1 - b2)
        p -= lr_t * m / (torch.sqrt(v) + eps)
