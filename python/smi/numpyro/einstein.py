"""NumPyro's ``numpyro.contrib.einstein`` API on smi's engine.

A script written for NumPyro's Stein mixtures changes its import lines only::

    from smi.numpyro.einstein import MixtureGuidePredictive, RBFKernel, SteinVI

``SteinVI``, ``SVGD`` and ``ASVGD`` take NumPyro 0.22's constructor arguments and
``run(rng_key, num_steps, *args, progress_bar=True, init_state=None, **kwargs)``; the result
has ``params`` (the guide's parameters, particles first, under NumPyro's names), ``state`` and
``losses`` (the norm of the Stein force per step, as NumPyro's). ``MixtureGuidePredictive`` is
NumPyro's own: it reads those parameters. The kernels mirror NumPyro's constructors, and
NumPyro's own kernel objects are accepted too.

What the engine supports, and where it differs on purpose:

- Guides: ``AutoNormal`` for ``SteinVI`` (each particle a mean-field Normal); ``SVGD`` and
  ``ASVGD`` use point masses (NumPyro's ``AutoDelta``). A hand-written guide or another
  autoguide is refused with a message; the fit runs on smi's closed-form guide, not on the
  guide's code.
- Optimizers: ``numpyro.optim.Adagrad``, ``Adam`` and ``SGD`` with a constant step size.
- Initialisation: ``init_to_uniform(radius=r)`` (AutoNormal's default, r = 2);
  ``init_to_median`` (AutoDelta's default) starts uniform in (-2, 2), since the engine cannot
  draw from a Python model's prior.
- The guide's scale is transformed once, as the paper's SMI (NumPyro >= 0.16 transforms it
  twice, docs/algorithms.md section 2.9); SVGD's and ASVGD's particles target the posterior
  with its log-Jacobian (NumPyro's point masses leave it out).
- ``GraphicalKernel`` (blocks of a flat parameter vector) and a continued run
  (``init_state``) are not available; ``non_mixture_guide_params_fn`` must select no
  parameter.

Requires ``jax`` and ``numpyro``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import NumPyroPosterior
from . import fit as _fit_model

try:
    import jax
    from numpyro import handlers
    from numpyro.contrib.einstein import MixtureGuidePredictive
    from numpyro.infer import init_to_uniform
    from numpyro.infer.autoguide import AutoDelta, AutoNormal
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("smi.numpyro.einstein needs jax and numpyro") from err

__all__ = [
    "ASVGD",
    "SVGD",
    "IMQKernel",
    "LinearKernel",
    "MixtureGuidePredictive",
    "MixtureKernel",
    "ProbabilityProductKernel",
    "RBFKernel",
    "RandomFeatureKernel",
    "SteinVI",
    "SteinVIRunResult",
    "SteinVIState",
]


# --- kernels ------------------------------------------------------------------------------


class SteinKernel:
    """A Stein kernel: its description for the engine (``settings``)."""

    _mode = "norm"

    @property
    def mode(self) -> str:
        return self._mode

    def settings(self, num_particles: int) -> dict[str, Any]:
        """The engine's description of this kernel (``smi.fit``'s ``kernel``) for m particles."""
        return _kernel_settings(self, num_particles)


class RBFKernel(SteinKernel):
    """k(x, y) = exp(-||x - y||^2 / h), h = median^2 * f(m) (the median heuristic).

    Args:
        mode: ``"norm"`` (a scalar kernel), ``"vector"`` (per coordinate) or ``"matrix"``.
        matrix_mode: for ``"matrix"``, ``"norm_diag"`` or ``"vector_diag"``.
        bandwidth_factor: f(m) (default 1 / log m); a callable is evaluated at the run's m.
    """

    def __init__(
        self,
        mode: str = "norm",
        matrix_mode: str = "norm_diag",
        bandwidth_factor: Callable[[float], float] | None = None,
    ) -> None:
        _check(mode in ("norm", "vector", "matrix"), f"RBFKernel mode {mode!r}")
        _check(matrix_mode in ("norm_diag", "vector_diag"), f"matrix_mode {matrix_mode!r}")
        self._mode = mode
        self.matrix_mode = matrix_mode
        self.bandwidth_factor = bandwidth_factor


class IMQKernel(SteinKernel):
    """k(x, y) = (const^2 + ||x - y||^2)^expon, mode ``"norm"`` or ``"vector"``."""

    def __init__(self, mode: str = "norm", const: float = 1.0, expon: float = -0.5) -> None:
        _check(mode in ("norm", "vector"), f"IMQKernel mode {mode!r}")
        self._mode = mode
        self.const = const
        self.expon = expon


class LinearKernel(SteinKernel):
    """k(x, y) = x^T y + 1 (mode ``"norm"``)."""

    def __init__(self, mode: str = "norm") -> None:
        _check(mode == "norm", f"LinearKernel mode {mode!r}")
        self._mode = mode


class RandomFeatureKernel(SteinKernel):
    """Random Fourier features of the RBF kernel (mode ``"norm"``); the features are drawn
    once from a fixed seed."""

    def __init__(
        self,
        mode: str = "norm",
        bandwidth_subset: int | None = None,
        bandwidth_factor: Callable[[float], float] | None = None,
    ) -> None:
        _check(mode == "norm", f"RandomFeatureKernel mode {mode!r}")
        self._mode = mode
        self.bandwidth_subset = bandwidth_subset
        self.bandwidth_factor = bandwidth_factor


class MixtureKernel(SteinKernel):
    """sum_i ws[i] * kernel_fns[i], at least two kernels of one mode."""

    def __init__(self, ws: list[float], kernel_fns: list[Any], mode: str = "norm") -> None:
        _check(len(ws) == len(kernel_fns) > 1, "MixtureKernel needs matching ws and >= 2 kernels")
        self._mode = mode
        self.ws = list(ws)
        self.kernel_fns = list(kernel_fns)


class ProbabilityProductKernel(SteinKernel):
    """The probability product kernel of two particles' Normal guides (``AutoNormal``)."""

    def __init__(self, guide: Any, scale: float = 1.0, mode: str = "norm") -> None:
        _check(mode == "norm", f"ProbabilityProductKernel mode {mode!r}")
        _check(isinstance(guide, AutoNormal), "ProbabilityProductKernel needs an AutoNormal")
        self._mode = mode
        self.guide = guide
        self.scale = scale


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"unsupported kernel setting: {what}")


def _default_factor_codes() -> list[Any]:
    """The code of NumPyro's default bandwidth factors (1 / log m), to recognise them."""
    from numpyro.contrib import einstein

    codes = []
    for cls in (einstein.RBFKernel, einstein.RandomFeatureKernel):
        default = inspect.signature(cls.__init__).parameters["bandwidth_factor"].default
        codes.append(getattr(default, "__code__", None))
    return codes


def _bandwidth(factor: Callable[[float], float] | None, m: int) -> Any:
    if factor is None or any(
        getattr(factor, "__code__", None) is c for c in _default_factor_codes()
    ):
        return "inverse_log"
    value = float(factor(m))
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"bandwidth_factor({m}) = {value}; it must be finite and > 0")
    return {"constant": value}


def _mode(kernel: Any) -> Any:
    mode = kernel.mode
    if mode == "matrix":
        return {"matrix": kernel.matrix_mode}
    return mode


def _kernel_settings(kernel: Any, m: int) -> dict[str, Any]:
    """The engine's kernel description of ``kernel`` (ours, or NumPyro's of the same name)."""
    name = type(kernel).__name__
    if name == "RBFKernel":
        return {
            "kind": "rbf",
            "mode": _mode(kernel),
            "bandwidth_factor": _bandwidth(kernel.bandwidth_factor, m),
        }
    if name == "IMQKernel":
        return {"kind": "imq", "mode": _mode(kernel), "c": kernel.const, "beta": kernel.expon}
    if name == "LinearKernel":
        return {"kind": "linear"}
    if name == "RandomFeatureKernel":
        return {
            "kind": "random_feature",
            "bandwidth_factor": _bandwidth(kernel.bandwidth_factor, m),
            "bandwidth_subset": kernel.bandwidth_subset,
        }
    if name == "MixtureKernel":
        return {
            "kind": "mixture",
            "weights": [float(w) for w in kernel.ws],
            "kernels": [_kernel_settings(k, m) for k in kernel.kernel_fns],
        }
    if name == "ProbabilityProductKernel":
        return {"kind": "probability_product", "scale": float(kernel.scale)}
    raise ValueError(
        f"{name} is not available on smi's engine; use RBFKernel, IMQKernel, LinearKernel, "
        "RandomFeatureKernel, MixtureKernel or ProbabilityProductKernel"
    )


# --- optimizers, keys, guides ----------------------------------------------------------------


def _closure(fn: Any, depth: int = 4) -> dict[str, Any]:
    """The variables that ``fn`` and the functions it closes over capture, by name."""
    found: dict[str, Any] = {}
    stack = [(fn, 0)]
    while stack:
        f, level = stack.pop()
        cells = getattr(f, "__closure__", None) or ()
        names = getattr(getattr(f, "__code__", None), "co_freevars", ())
        for name, cell in zip(names, cells, strict=False):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            found.setdefault(name, value)
            if callable(value) and level < depth:
                stack.append((value, level + 1))
    return found


def _optimizer(optim: Any) -> dict[str, Any]:
    """``smi.fit``'s optimizer settings for a ``numpyro.optim`` Adagrad, Adam or SGD."""
    kind = type(optim).__name__
    if kind not in ("Adagrad", "Adam", "SGD"):
        raise ValueError(
            f"optimizer {kind} is not available on smi's engine; use numpyro.optim.Adagrad, "
            "Adam or SGD"
        )
    captured = _closure(optim.update_fn)
    schedule = captured.get("step_size")
    try:
        lr = float(schedule(0))  # type: ignore[misc]
    except TypeError as err:
        raise ValueError(f"could not read the step size of numpyro.optim.{kind}") from err
    if float(schedule(10_000)) != lr:
        raise ValueError("a step-size schedule is not available on smi's engine; use a constant")
    expected = {"Adagrad": {"momentum": 0.9}, "Adam": {"b1": 0.9, "b2": 0.999, "eps": 1e-8}}
    for name, value in expected.get(kind, {}).items():
        if name in captured and float(captured[name]) != value:
            raise ValueError(f"numpyro.optim.{kind}({name}={captured[name]}): smi uses {value}")
    return {"optimizer": kind.lower(), "lr": lr, "constant_lr": True}


def _seed(rng_key: Any) -> int:
    """A 63-bit seed from a JAX PRNG key (raw or typed)."""
    key = rng_key
    if jax.dtypes.issubdtype(getattr(key, "dtype", None), jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = np.asarray(key, dtype=np.uint64).ravel()
    seed = 0
    for w in words:
        seed = ((seed << 32) | int(w)) & ((1 << 63) - 1)
    return seed


def _init_options(guide: Any) -> dict[str, float]:
    """``smi.fit``'s initialisation for the guide's ``init_loc_fn``: ``init_to_uniform``'s
    radius (AutoNormal's default, 2), or for ``init_to_median`` (AutoDelta's default) the
    engine's own, Uniform(-2, 2) on a Python model (it cannot draw from the prior)."""
    init = getattr(guide, "init_loc_fn", init_to_uniform)
    func = getattr(init, "func", init)
    name = getattr(func, "__name__", repr(init))
    if name == "init_to_median":
        return {}
    if name != "init_to_uniform":
        raise ValueError(
            f"guide init_loc_fn {name!r} is not available on smi's engine; use "
            "init_to_uniform(radius=r) or init_to_median"
        )
    radius = getattr(init, "keywords", {}).get("radius", 2.0)
    if radius <= 0:
        raise ValueError("SteinVI needs init_to_uniform with radius > 0")
    return {"init_radius": float(radius)}


def _setup_guide(guide: Any, args: tuple[Any, ...], kwargs: dict[str, Any], seed: int) -> None:
    """Runs ``guide`` once so that it builds its prototype (``MixtureGuidePredictive`` and
    NumPyro's ``Predictive`` need it)."""
    with handlers.block():
        handlers.seed(guide, rng_seed=seed % (2**31))(*args, **kwargs)


# --- SteinVI ---------------------------------------------------------------------------------


@dataclass
class SteinVIState:
    """What a run leaves: the fit (``posterior``, a ``smi.numpyro.NumPyroPosterior``) and the
    temperatures it ran with."""

    posterior: NumPyroPosterior
    rng_key: Any
    loss_temperature: float
    repulsion_temperature: float
    params: dict[str, np.ndarray] = field(default_factory=dict)


class SteinVIRunResult(NamedTuple):
    """``params`` (the guide's parameters, particles first), ``state`` and ``losses``."""

    params: dict[str, np.ndarray]
    state: SteinVIState
    losses: np.ndarray


class SteinVI:
    """Stein mixture inference (the paper's SMI) with NumPyro's ``SteinVI`` arguments.

    Args:
        model: the NumPyro model.
        guide: an ``AutoNormal`` of the model (each particle parameterises one).
        optim: ``numpyro.optim.Adagrad``, ``Adam`` or ``SGD`` (constant step size).
        kernel_fn: a kernel of this module or NumPyro's.
        num_stein_particles: m, the mixture's components (default 10).
        num_elbo_particles: S, the ELBO draws per particle and step (default 10).
        loss_temperature: tau, the multiplier on the model term of the attraction.
        repulsion_temperature: alpha, the weight of the repulsion.
        non_mixture_guide_params_fn: must select no guide parameter (shared parameters are
            not available through this API).
        static_kwargs: keyword arguments passed to the model on every call.
    """

    _method = "smi"

    def __init__(
        self,
        model: Callable[..., Any],
        guide: Any,
        optim: Any,
        kernel_fn: Any,
        num_stein_particles: int = 10,
        num_elbo_particles: int = 10,
        loss_temperature: float = 1.0,
        repulsion_temperature: float = 1.0,
        non_mixture_guide_params_fn: Callable[[str], bool] = lambda name: False,
        **static_kwargs: Any,
    ) -> None:
        if self._method == "smi" and not isinstance(guide, AutoNormal):
            raise ValueError(
                f"smi's SteinVI runs on AutoNormal guides; got {type(guide).__name__} (a "
                "hand-written guide or another autoguide is not available)"
            )
        self.model = model
        self.guide = guide
        self.optim = optim
        self.kernel_fn = kernel_fn
        self.num_stein_particles = int(num_stein_particles)
        self.num_elbo_particles = int(num_elbo_particles)
        self.loss_temperature = float(loss_temperature)
        self.repulsion_temperature = float(repulsion_temperature)
        self.non_mixture_params_fn = non_mixture_guide_params_fn
        self.static_kwargs = static_kwargs
        self.guide_sites: set[str] | None = None
        self._options = _optimizer(optim)
        self._kernel = _kernel_settings(kernel_fn, self.num_stein_particles)

    def _settings(self) -> dict[str, Any]:
        scale = float(getattr(self.guide, "_init_scale", 0.1))
        return {
            "guide": "normal",
            "start": "draw",
            "num_elbo_particles": self.num_elbo_particles,
            "loss_temperature": self.loss_temperature,
            "repulsion_temperature": self.repulsion_temperature,
            "init_scale": scale,
        }

    def run(
        self,
        rng_key: Any,
        num_steps: int,
        *args: Any,
        progress_bar: bool = True,
        init_state: SteinVIState | None = None,
        **kwargs: Any,
    ) -> SteinVIRunResult:
        """Runs ``num_steps`` steps on ``model(*args, **kwargs, **static_kwargs)``.

        Returns ``SteinVIRunResult(params, state, losses)``: ``params`` under the guide's
        names (``f"{site}_auto_loc"``, ``f"{site}_auto_scale"`` for ``AutoNormal``,
        ``f"{site}_auto_loc"`` constrained for the point masses of SVGD/ASVGD), each with the
        particles as its first axis; ``losses`` the norm of the Stein force per step.
        """
        if init_state is not None:
            raise ValueError(
                "continuing from init_state is not available on smi's engine; run again with "
                "the total number of steps"
            )
        kwargs = {**kwargs, **self.static_kwargs}
        seed = _seed(rng_key)
        post = _fit_model(
            self.model,
            *args,
            model_kwargs=kwargs,
            method=self._method,
            seed=seed,
            num_stein_particles=self.num_stein_particles,
            num_steps=int(num_steps),
            converge=False,
            kernel=self._kernel,
            **_init_options(self.guide),
            progress_bar=progress_bar,
            **self._options,
            **self._settings(),
        )
        _setup_guide(self.guide, args, kwargs, seed)
        params = self._params(post)
        shared = sorted(name for name in params if self.non_mixture_params_fn(name))
        if shared:
            raise ValueError(
                f"non_mixture_guide_params_fn selects {', '.join(shared)}: shared guide "
                "parameters are not available through this API"
            )
        self.guide_sites = set(params)
        state = SteinVIState(
            post, rng_key, self.loss_temperature, self.repulsion_temperature, params
        )
        return SteinVIRunResult(params, state, np.asarray(post.posterior.losses))

    def get_params(self, state: SteinVIState) -> dict[str, np.ndarray]:
        """The guide's parameters of a run (``run(...).params``)."""
        return state.params

    def _params(self, post: NumPyroPosterior) -> dict[str, np.ndarray]:
        """AutoNormal's parameters: per latent site, the particles' unconstrained locations
        and their scales."""
        prefix = getattr(self.guide, "prefix", "auto")
        locs = _per_site(post, post.posterior.locations)
        scales = _per_site(post, post.posterior.scales)
        out: dict[str, np.ndarray] = {}
        for site in locs:
            out[f"{site}_{prefix}_loc"] = locs[site]
            out[f"{site}_{prefix}_scale"] = scales[site]
        return out


def _per_site(post: NumPyroPosterior, flat: Any) -> dict[str, np.ndarray]:
    """m flat unconstrained rows → per latent site, the m rows in the site's shape."""
    rows = np.asarray(flat, dtype=np.float64)
    sites = jax.vmap(post._unravel)(rows)
    return {name: np.asarray(value) for name, value in sites.items()}


class SVGD(SteinVI):
    """Stein variational gradient descent: m point masses (NumPyro's ``SVGD`` arguments;
    ``guide_kwargs`` may set AutoDelta's ``init_loc_fn``). The particles target the
    posterior with its log-Jacobian."""

    _method = "svgd"

    def __init__(
        self,
        model: Callable[..., Any],
        optim: Any,
        kernel_fn: Any,
        num_stein_particles: int = 10,
        guide_kwargs: dict[str, Any] | None = None,
        **static_kwargs: Any,
    ) -> None:
        super().__init__(
            model,
            AutoDelta(model, **(guide_kwargs or {})),
            optim,
            kernel_fn,
            num_stein_particles=num_stein_particles,
            num_elbo_particles=1,
            **static_kwargs,
        )

    def _settings(self) -> dict[str, Any]:
        return {}

    def _params(self, post: NumPyroPosterior) -> dict[str, np.ndarray]:
        """AutoDelta's parameters: per latent site, the particles' constrained values."""
        prefix = getattr(self.guide, "prefix", "auto")
        rows = np.asarray(post.posterior.locations, dtype=np.float64)
        constrained = post._constrained(rows)
        latent = _per_site(post, rows)
        return {f"{site}_{prefix}_loc": constrained[site] for site in latent}


class ASVGD(SVGD):
    """Annealed SVGD (NumPyro's ``ASVGD`` arguments): SVGD whose attraction follows a
    cyclical annealing schedule of ``num_cycles`` cycles and ``transition_speed``."""

    _method = "asvgd"

    def __init__(
        self,
        model: Callable[..., Any],
        optim: Any,
        kernel_fn: Any,
        num_stein_particles: int = 10,
        num_cycles: int = 10,
        transition_speed: float = 10,
        guide_kwargs: dict[str, Any] | None = None,
        **static_kwargs: Any,
    ) -> None:
        if num_cycles <= 0 or transition_speed <= 0:
            raise ValueError("num_cycles and transition_speed must be > 0")
        self.num_cycles = int(num_cycles)
        self.transition_speed = float(transition_speed)
        super().__init__(
            model, optim, kernel_fn, num_stein_particles, guide_kwargs, **static_kwargs
        )

    def _settings(self) -> dict[str, Any]:
        return {"num_cycles": self.num_cycles, "transition_speed": self.transition_speed}
