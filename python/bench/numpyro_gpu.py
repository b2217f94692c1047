"""NumPyro's SMI step on the GPU, for the `smi bench --device cuda` comparison (docs/cuda.md).

Same models and settings as ``smi bench`` (crates/smi-experiments/src/bench/mod.rs):

* ``boston``: 13→50→50→1 relu, N(0, 1) weights, prec ~ Gamma(1, 0.1), N = 455 synthetic rows,
  a fresh mini-batch of b = 100 per step (``plate(subsample_size=100)``); m = 5, S = 100;
* ``boston-1h``: the same with one hidden layer 13→50→1;
* ``mnist-1``: 784→100→10 tanh, softmax, N = 60 000 synthetic images, one shared batch of
  b = 128 rows per step (scale N/b); m = 5, S = 55 or 10.

SteinVI with AutoNormal (init scale 0.1), the RBF kernel and Adagrad(0.05) (``smi bench``'s
optimizer for the Stein methods). Timing: ``--steps`` updates as one jit-compiled
``lax.scan`` over ``SteinVI.update``; the first two calls compile (the initial state and
the updated one have different leaf types) and are not timed, the next ``--repeat`` calls
are timed (``block_until_ready``), divided by the steps, and the best is reported. One JSON object per line on stdout.

Run: ``python3 python/bench/numpyro_gpu.py [--configs boston boston-1h mnist-1:55 mnist-1:10]
[--steps 50] [--repeat 3]`` (JAX picks the GPU when one is there; the device is printed).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.einstein import RBFKernel, SteinVI
from numpyro.infer.autoguide import AutoNormal
from numpyro.optim import Adagrad

M, LR = 5, 0.05


def weights(sizes: tuple[int, ...]) -> list[tuple[Any, Any]]:
    """N(0, 1) weights and biases w{i}, b{i} of the network (sampled outside the data plate)."""
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        w = numpyro.sample(f"w{i}", dist.Normal(0.0, 1.0).expand([a, b]).to_event(2))
        c = numpyro.sample(f"b{i}", dist.Normal(0.0, 1.0).expand([b]).to_event(1))
        layers.append((w, c))
    return layers


def forward(h: Any, layers: list[tuple[Any, Any]], act: Callable[[Any], Any]) -> Any:
    """act(…act(h·W1 + b1)…)·W_out + b_out."""
    for i, (w, c) in enumerate(layers):
        h = h @ w + c
        if i < len(layers) - 1:
            h = act(h)
    return h


def uci(hidden: tuple[int, ...]) -> tuple[Callable[..., None], tuple[Any, ...]]:
    """The UCI network on Boston-shaped synthetic data; per-step mini-batches of 100."""
    rng = np.random.default_rng(20_240_917)
    x = rng.uniform(-1.7, 1.7, size=(455, 13))
    y = np.tanh(x @ rng.uniform(-1, 1, size=13)) + 0.3 * rng.uniform(-1, 1, size=455)

    def model(x: Any, y: Any) -> None:
        layers = weights((13, *hidden, 1))
        prec = numpyro.sample("prec", dist.Gamma(1.0, 0.1))
        with numpyro.plate("data", x.shape[0], subsample_size=100) as idx:
            out = forward(x[idx], layers, jax.nn.relu)
            numpyro.sample("y", dist.Normal(out[..., 0], 1.0 / jnp.sqrt(prec)), obs=y[idx])

    return model, (jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))


N_MNIST, B_MNIST = 60_000, 128


def mnist_model(xb: Any, yb: Any) -> None:
    """784→100→10 tanh on a batch of rows, the likelihood scaled by N/b."""
    layers = weights((784, 100, 10))
    with numpyro.plate("data", N_MNIST, subsample_size=xb.shape[0]):
        logits = forward(xb, layers, jnp.tanh)
        numpyro.sample("y", dist.Categorical(logits=logits), obs=yb)


def mnist_batches(steps: int) -> tuple[Any, Any]:
    """``steps`` shared batches of 128 synthetic images and labels (steps × 128 × 784)."""
    rng = np.random.default_rng(20_240_917)
    x = rng.uniform(size=(steps * B_MNIST, 784)).astype(np.float32)
    y = rng.integers(0, 10, size=steps * B_MNIST)
    return (
        jnp.asarray(x.reshape(steps, B_MNIST, 784)),
        jnp.asarray(y.reshape(steps, B_MNIST), jnp.int32),
    )


def time_scan(
    model: Callable[..., None],
    init_args: tuple[Any, ...],
    s: int,
    steps: int,
    repeat: int,
    batches: tuple[Any, ...] | None,
) -> tuple[float, float]:
    """(ms per step, compile seconds) of a jitted ``lax.scan`` of ``steps`` updates."""
    stein = SteinVI(
        model,
        AutoNormal(model),
        Adagrad(LR),
        RBFKernel(),
        num_stein_particles=M,
        num_elbo_particles=s,
    )
    state = stein.init(jax.random.PRNGKey(0), *init_args)

    if batches is None:

        def body(st: Any, _: Any) -> tuple[Any, Any]:
            return stein.update(st, *init_args)

        def scan(st: Any) -> tuple[Any, Any]:
            return jax.lax.scan(body, st, None, length=steps)

    else:

        def body(st: Any, batch: Any) -> tuple[Any, Any]:
            return stein.update(st, *batch)

        def scan(st: Any) -> tuple[Any, Any]:
            return jax.lax.scan(body, st, batches)

    run = jax.jit(scan)
    # two untimed calls: the first compiles for the initial state, the second again for the
    # state an update returns (its leaves' weak types differ from the initial ones)
    t = time.perf_counter()
    for _ in range(2):
        state, losses = run(state)
        jax.block_until_ready((state, losses))
    compile_s = time.perf_counter() - t
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        state, losses = run(state)
        jax.block_until_ready((state, losses))
        best = min(best, time.perf_counter() - t)
    return 1e3 * best / steps, compile_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--configs",
        nargs="+",
        default=["boston", "boston-1h", "mnist-1:55", "mnist-1:10"],
        help="boston, boston-1h, mnist-1:S",
    )
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    device = jax.devices()[0]
    for name in args.configs:
        config, _, draws = name.partition(":")
        if config == "boston":
            model, init, s, batches = *uci((50, 50)), 100, None
        elif config == "boston-1h":
            model, init, s, batches = *uci((50,)), 100, None
        elif config == "mnist-1":
            batches = mnist_batches(args.steps)
            model, init, s = mnist_model, (batches[0][0], batches[1][0]), int(draws or 55)
        else:
            raise SystemExit(f"unknown config {config!r}: boston, boston-1h, mnist-1:S")
        ms, compile_s = time_scan(model, init, s, args.steps, args.repeat, batches)
        record = {
            "config": config,
            "method": "smi",
            "S": s,
            "m": M,
            "ms_per_step": round(ms, 4),
            "steps": args.steps,
            "compile_s": round(compile_s, 2),
            "device": f"{device.platform}:{device.device_kind}",
            "numpyro": numpyro.__version__,
            "jax": jax.__version__,
        }
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
