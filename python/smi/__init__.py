"""smi: Stein Mixture Inference on a Rust engine.

``smi.fit`` runs SMI, SVGD, ASVGD, mean-field VI (``"ovi"``), MAP or NUTS on any batched log
density written in Python::

    import numpy as np
    import smi

    def logdensity(theta):  # theta: K x d float64
        return -0.5 * (theta**2).sum(axis=1), -theta

    post = smi.fit(logdensity, dim=2, method="smi", num_stein_particles=5)
    print(post.mean, post.var)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ._smi import DEFAULT_STEPS, Posterior, SmiError
from ._smi import fit as _fit

__all__ = [
    "DEFAULT_STEPS",
    "METHODS",
    "BNNClassifier",
    "BNNRegressor",
    "Posterior",
    "SmiError",
    "fit",
]

_SKLEARN = ("BNNClassifier", "BNNRegressor")


def __getattr__(name: str) -> Any:
    """``smi.BNNRegressor`` and ``smi.BNNClassifier``, imported on first use (so that ``import
    smi`` does not need scikit-learn)."""
    if name in _SKLEARN:
        from . import sklearn as _sklearn

        return getattr(_sklearn, name)
    raise AttributeError(f"module 'smi' has no attribute {name!r}")


#: The methods ``fit`` accepts.
METHODS = ("smi", "svgd", "asvgd", "ovi", "map", "nuts")

LogDensityFn = Callable[[npt.NDArray[np.float64]], tuple[Any, Any]]


def fit(
    logdensity: LogDensityFn,
    dim: int,
    method: str = "smi",
    *,
    num_stein_particles: int | None = None,
    num_elbo_particles: int | None = None,
    num_steps: int | None = None,
    converge: bool = True,
    optimizer: str | None = None,
    constant_lr: bool = False,
    lr: float | None = None,
    init_radius: float | None = None,
    seed: int = 0,
    num_warmup: int | None = None,
    num_samples: int | None = None,
    num_chains: int | None = None,
    quality_draws: int | None = None,
    repulsion_temperature: float | None = None,
    guide: str | None = None,
    start: str | None = None,
    kernel: str | dict[str, Any] | None = None,
    loss_temperature: float | None = None,
    init_scale: float | None = None,
    num_cycles: int | None = None,
    transition_speed: float | None = None,
    progress_bar: bool = True,
) -> Posterior:
    """Fit the posterior of a batched log density by ``method``.

    Args:
        logdensity: ``logdensity(theta) -> (logp, grad)``: ``theta`` is a K x ``dim`` float64
            array of K draws on the unconstrained space; return log p (shape K) and its
            gradient (K x ``dim``), as NumPy arrays or anything with ``__array__``. It is called
            once per engine step with all K draws of the step (K = particles x ELBO draws), and
            once per leapfrog step (K = 1) by NUTS. It must include every Jacobian term of its
            own transforms: the engine sees only this function.
        dim: d, the number of parameters.
        method: one of ``METHODS``.
        num_stein_particles: m, the particles of SMI, SVGD and ASVGD (preset: 5 for SMI,
            20 for SVGD/ASVGD).
        num_elbo_particles: S, the ELBO draws per particle of SMI and OVI.
        num_steps: the step cap of a variational method (default ``DEFAULT_STEPS``).
        converge: stop when the ELBO estimate stops improving (the rule of
            ``docs/convergence.md``: windows of 500 steps, patience 10) before the cap; with
            ``False`` exactly ``num_steps`` steps run. ``Posterior.termination`` says which ended
            the fit.
        optimizer: ``"adam"``, ``"adagrad"`` or ``"sgd"`` (default: the method's preset, Adam
            at 0.1 with reduce-on-plateau for every variational method).
        lr: the (initial) learning rate (default: the preset's).
        constant_lr: drop the preset's reduce-on-plateau schedule and keep ``lr`` constant.
        init_radius: particles start uniform in (-r, r).
        seed: the seed of every random choice; the same seed gives the same result.
        num_warmup, num_samples, num_chains: NUTS's warm-up and draws per chain, and chains.
        repulsion_temperature: alpha, the weight of the Stein repulsion of SMI, SVGD and ASVGD
            (NumPyro's name; default: the preset's).
        quality_draws: the draws of the fit-quality diagnostic k-hat, computed after a
            variational fit in batches of at most 256 (default 2000; 0 skips it).
        guide: the guide family of SMI's particles and of OVI: ``"normal"`` (mean-field, the
            default), ``"lowrank:R"`` (diagonal plus a rank-R factor: captures R directions
            of correlation) or ``"fullrank"`` (every correlation; for small ``dim``, its cost
            grows as ``dim`` squared). See ``docs/algorithms.md`` section 2.12.
        start: where SMI's particles (and OVI's guide) start from their drawn locations:
            ``"draw"`` (as drawn, scale 0.1) or ``"laplace"`` (each climbs by L-BFGS to the
            nearest mode and starts as the Laplace approximation there, kept when its ELBO
            estimate beats the draw's). Default: the library's (``docs/defaults.md``).
        kernel: the Stein kernel of SMI, SVGD and ASVGD, as a dict or its JSON, tagged by
            ``"kind"``: ``{"kind": "rbf"}`` (the default; ``"mode"``: ``"norm"``,
            ``"vector"``, ``"norm_diag"`` or ``"vector_diag"``; ``"bandwidth_factor"``:
            ``"inverse_log"``, ``"inverse_log_plus_one"`` or ``{"constant": f}``),
            ``{"kind": "imq", "c": 1.0, "beta": -0.5}``, ``{"kind": "linear"}``,
            ``{"kind": "random_feature"}``, ``{"kind": "probability_product"}``, and
            ``{"kind": "mixture", "weights": [...], "kernels": [...]}``.
        loss_temperature: tau, SMI's multiplier on the model term of the attraction (NumPyro's
            name; default 1): the particles ascend the ELBO of p^tau, so tau > 1 narrows
            the fit (docs/algorithms.md).
        init_scale: the initial scale of each coordinate of SMI's and OVI's guides (default
            0.1; NumPyro's ``AutoNormal(init_scale=...)``).
        num_cycles, transition_speed: ASVGD's annealing cycles and transition speed (NumPyro's
            names; default 10 and 10).
        progress_bar: show progress on stderr while fitting: a bar on a terminal, otherwise a
            line a minute (NumPyro's name; default on). The environment variable
            ``SMI_NO_PROGRESS`` turns it off everywhere.

    Returns:
        A ``Posterior``: ``sample(n, seed)``, ``mean``, ``var``, ``losses``, ``elbos``,
        ``summary()`` and more. Its diagnostics: ``termination`` (``"converged"``,
        ``"max_steps"``, ``"early_stopped"``, or the failures ``"diverged"`` and
        ``"unstable"`` with ``termination_reason``), ``elbo`` with ``elbo_mcse``, ``khat`` (the
        Pareto-smoothed importance-sampling diagnostic of the final approximation; above
        ``khat_threshold``, 0.7, the approximation is unreliable), ``warnings`` and
        ``trusted``. A fit that is not trusted also raises a ``UserWarning`` saying why.

    Raises:
        ValueError: a bad setting (the message says which).
        SmiError: the engine failed (e.g. non-finite values).
        Exception: whatever ``logdensity`` raised, re-raised as it was.
        KeyboardInterrupt: Ctrl-C during the fit.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    post = _fit(
        logdensity,
        dim,
        method,
        num_stein_particles=num_stein_particles,
        num_elbo_particles=num_elbo_particles,
        num_steps=num_steps,
        converge=converge,
        optimizer=optimizer,
        constant_lr=constant_lr,
        lr=lr,
        init_radius=init_radius,
        seed=seed,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        quality_draws=quality_draws,
        repulsion_temperature=repulsion_temperature,
        guide=guide,
        start=start,
        kernel=json.dumps(kernel) if isinstance(kernel, dict) else kernel,
        loss_temperature=loss_temperature,
        init_scale=init_scale,
        num_cycles=num_cycles,
        transition_speed=transition_speed,
        progress_bar=progress_bar,
    )
    for problem in post.warnings:
        warnings.warn(f"smi.fit ({method}): {problem}", UserWarning, stacklevel=2)
    return post
