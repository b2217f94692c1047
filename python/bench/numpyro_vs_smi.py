"""One SMI step of ``smi.numpyro.fit`` against NumPyro's own jitted ``SteinVI.update``.

Both run the same NumPyro model in one process, on the same JAX configuration:

* ``boston``: the UCI BNN 13→50→50→1 relu, N(0, 1) weights, noise precision
  prec ~ Gamma(1, 0.1) (docs/algorithms.md §7.3), synthetic data of Boston's shape
  (N = 455, 13 features), ``plate(subsample_size=100)``;
* ``wave``: the paper's 1-D wave net 1→100→100→1 tanh, N(0, 1) priors, known noise 0.1,
  the 40 training points' layout of docs/algorithms.md §7.2 (synthetic), full batch;
* ``empty``: ``smi.fit`` on a log density that returns zeros (the per-step cost of the
  Rust → Python → Rust round trip).

SMI settings on both sides: m = 5 particles (``num_stein_particles``), S = 100 ELBO draws
(``num_elbo_particles``), AutoNormal guide, RBF kernel, Adam(1e-3). Compile time is excluded:
smi's step is the median time between the starts of consecutive calls of the log density
(one call per engine step) after the first two (JAX compiles in the first), and the JAX
share is the median time inside the call; NumPyro's ``update`` is called once before each
step is timed separately (median). Each number is then the median over ``--repeat`` runs.

Run: ``target/py-venv/bin/python python/bench/numpyro_vs_smi.py [--steps 200] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any, Self

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import smi
import smi.numpyro as snp
from numpyro.contrib.einstein import RBFKernel, SteinVI
from numpyro.infer.autoguide import AutoNormal
from numpyro.optim import Adam

M, S, LR = 5, 100, 1e-3


def bnn(
    x: Any,
    y: Any,
    hidden: tuple[int, ...],
    act: Callable[[Any], Any],
    batch: int | None,
    noise: float | None,
) -> None:
    """An MLP with N(0, 1) weights; Gaussian noise with known sd or Gamma(1, 0.1) precision."""
    n, width = x.shape
    h = x
    sizes = (width, *hidden, 1)
    layers = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        w = numpyro.sample(f"w{i}", dist.Normal(0.0, 1.0).expand([a, b]).to_event(2))
        c = numpyro.sample(f"b{i}", dist.Normal(0.0, 1.0).expand([b]).to_event(1))
        layers.append((w, c))
    if noise is None:
        prec = numpyro.sample("prec", dist.Gamma(1.0, 0.1))
        sd = 1.0 / jnp.sqrt(prec)
    else:
        sd = noise
    with numpyro.plate("data", n, subsample_size=batch) as idx:
        h = x[idx]
        for i, (w, c) in enumerate(layers):
            h = h @ w + c
            if i < len(layers) - 1:
                h = act(h)
        numpyro.sample("y", dist.Normal(h[..., 0], sd), obs=y[idx])


def boston() -> tuple[Callable[..., None], tuple[Any, ...]]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(455, 13))
    y = np.tanh(x @ rng.normal(size=13) / 4) + 0.1 * rng.normal(size=455)

    def model(x: Any, y: Any) -> None:
        bnn(x, y, (50, 50), jax.nn.relu, 100, None)

    return model, (jnp.asarray(x), jnp.asarray(y))


def wave() -> tuple[Callable[..., None], tuple[Any, ...]]:
    rng = np.random.default_rng(52)
    x = np.sort(np.r_[rng.uniform(-1.5, -0.5, 20), rng.uniform(1.3, 1.7, 20)])
    y = 1.5 * np.sin(2 * np.pi * x + 2 * np.pi / 3) + 3 * x + 1 + 0.1 * rng.normal(size=40)

    def model(x: Any, y: Any) -> None:
        bnn(x, y, (100, 100), jnp.tanh, None, 0.1)

    return model, (jnp.asarray(x[:, None]), jnp.asarray(y))


class Recorder:
    """Start time and duration of every call of a log density (one call per engine step)."""

    def __init__(self, logdensity: Callable[[np.ndarray], Any]) -> None:
        self.logdensity = logdensity
        self.starts: list[float] = []
        self.durations: list[float] = []

    def __call__(self, theta: np.ndarray) -> Any:
        t = time.perf_counter()
        out = self.logdensity(theta)
        self.starts.append(t)
        self.durations.append(time.perf_counter() - t)
        return out

    def per_step(self, skip: int = 2) -> tuple[float, float]:
        """Median seconds from one call's start to the next's (one whole engine step), and
        median seconds inside the call; the first ``skip`` calls (JAX compiles) are left out.
        """
        gaps = np.diff(self.starts[skip:])
        return float(np.median(gaps)), float(np.median(self.durations[skip + 1 :]))


class Recording:
    """Wraps ``smi.numpyro``'s call of ``smi.fit`` so the log density it builds is recorded."""

    def __init__(self) -> None:
        self.recorder: Recorder | None = None
        self._fit = snp._fit_density

    def __enter__(self) -> Self:
        def recorded_fit(logdensity: Any, *args: Any, **kwargs: Any) -> Any:
            self.recorder = Recorder(logdensity)
            return self._fit(self.recorder, *args, **kwargs)

        snp._fit_density = recorded_fit
        return self

    def __exit__(self, *exc: object) -> None:
        snp._fit_density = self._fit


def smi_step(model: Callable[..., None], args: tuple[Any, ...], n: int) -> tuple[float, float]:
    """(seconds per SMI step, seconds of it inside the JAX log density), medians over n steps."""
    with Recording() as rec:
        snp.fit(
            model,
            *args,
            method="smi",
            num_stein_particles=M,
            num_elbo_particles=S,
            num_steps=n + 3,
            converge=False,
            lr=LR,
            constant_lr=True,
        )
    assert rec.recorder is not None
    return rec.recorder.per_step()


def numpyro_step(model: Callable[..., None], args: tuple[Any, ...], n: int) -> float:
    """Median seconds per jitted ``SteinVI.update`` over n steps (after one compiling call)."""
    stein = SteinVI(
        model,
        AutoNormal(model),
        Adam(LR),
        RBFKernel(),
        num_stein_particles=M,
        num_elbo_particles=S,
    )
    state = stein.init(jax.random.PRNGKey(0), *args)
    update = jax.jit(stein.update)
    state, loss = update(state, *args)
    jax.block_until_ready((state, loss))
    times = []
    for _ in range(n):
        t = time.perf_counter()
        state, loss = update(state, *args)
        jax.block_until_ready((state, loss))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def zero(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log p = 0 and ∇ = 0 for every draw."""
    return np.zeros(theta.shape[0]), np.zeros_like(theta)


def empty_step(n: int, method: str) -> tuple[float, float]:
    """(µs per step of ``smi.fit`` on a zero log density of dimension 1, µs inside the call)."""
    kwargs: dict[str, Any] = {"num_steps": n + 3, "converge": False, "lr": LR}
    if method == "smi":
        kwargs.update(num_stein_particles=M, num_elbo_particles=S)
    recorder = Recorder(zero)
    smi.fit(recorder, 1, method, **kwargs)
    step, inside = recorder.per_step()
    return 1e6 * step, 1e6 * inside


def cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per run")
    parser.add_argument(
        "--numpyro-steps", type=int, default=10, help="timed SteinVI steps per run (slow)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs; medians are reported")
    parser.add_argument("--x64", action="store_true", help="float64 JAX on both sides")
    parser.add_argument("--only", choices=("boston", "wave", "empty"), action="append")
    opts = parser.parse_args()
    if opts.x64:
        numpyro.enable_x64()
    wanted = opts.only or ["boston", "wave", "empty"]
    print(f"CPU: {cpu()}, {os.cpu_count()} cores, load average {os.getloadavg()}")
    print(
        f"jax {jax.__version__}, numpyro {numpyro.__version__}, "
        f"{'float64' if opts.x64 else 'float32'} JAX, m={M}, S={S}, steps={opts.steps}, "
        f"repeat={opts.repeat} (medians)\n"
    )
    print(
        "| model | NumPyro SteinVI.update ms/step | smi.numpyro SMI ms/step "
        "| of which JAX call ms | of which Rust + transfer ms | speed-up |"
    )
    print("|---|---|---|---|---|---|")
    for name, build in (("boston", boston), ("wave", wave)):
        if name not in wanted:
            continue
        model, args = build()
        ours, jax_call, theirs = [], [], []
        for _ in range(opts.repeat):
            step, inside = smi_step(model, args, opts.steps)
            ours.append(step)
            jax_call.append(inside)
            theirs.append(numpyro_step(model, args, opts.numpyro_steps))
        a, b, c = (1e3 * statistics.median(v) for v in (theirs, ours, jax_call))
        print(f"| {name} | {a:.2f} | {b:.2f} | {c:.2f} | {b - c:.2f} | {a / b:.2f}x |", flush=True)
    if "empty" in wanted:
        print("\n| empty model (d = 1) | µs/step | of which inside the Python callable µs |")
        print("|---|---|---|")
        for method in ("ovi", "smi"):
            runs = [empty_step(opts.steps * 10, method) for _ in range(opts.repeat)]
            step = statistics.median(r[0] for r in runs)
            inside = statistics.median(r[1] for r in runs)
            label = (
                "OVI, S = 1 (K = 1)" if method == "ovi" else f"SMI, m = {M}, S = {S} (K = {M * S})"
            )
            print(f"| {label} | {step:.1f} | {inside:.1f} |", flush=True)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
