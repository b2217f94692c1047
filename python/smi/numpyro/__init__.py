"""NumPyro models through smi: ``smi.numpyro.fit(model, *args, method="smi")``.

The model's unconstrained potential comes from NumPyro's own ``initialize_model``; its
parameters are flattened with ``ravel_pytree``, and each engine step evaluates all K draws in
one jitted ``vmap(value_and_grad(...))`` call. Results come back in NumPyro's shapes: a dict of
site name to constrained draws (draws first), deterministic sites included.

Models with ``numpyro.plate(..., subsample_size=b)`` work with the variational methods: each
engine step (one call of the log density) draws one fresh subsample, under
``handlers.seed(model, fold_in(key, step))``, shared by all K draws of the step, as NumPyro's
``SteinVI`` does; the plate scales the subsampled log likelihood by N / b. NUTS needs the full
data and refuses such models (NumPyro's HMC does too).

Requires ``jax`` and ``numpyro`` (an optional extra of this package).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import fit as _fit_density
from .._jax_model import (
    DEFAULT_NUM_SAMPLES,
    LogDensity,
    ModelPosterior,
    as_numpy,
    full_log_density,
    renamed,
)

try:
    import jax
    from jax.flatten_util import ravel_pytree
    from numpyro.handlers import seed as seed_handler
    from numpyro.handlers import substitute
    from numpyro.infer.util import constrain_fn, initialize_model, potential_energy
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("smi.numpyro needs jax and numpyro: pip install jax numpyro") from err

__all__ = ["DEFAULT_NUM_SAMPLES", "NumPyroPosterior", "fit"]


class NumPyroPosterior(ModelPosterior):
    """A fit of a NumPyro model: the engine's ``Posterior`` plus the model's own structure
    (sites by name, constrained, deterministic sites included; see :class:`ModelPosterior`).

    Attributes:
        posterior: the ``smi.Posterior`` on the flattened unconstrained space.
        method: the method's name.
    """


def fit(
    model: Callable[..., Any],
    *model_args: Any,
    model_kwargs: dict[str, Any] | None = None,
    method: str = "smi",
    seed: int = 0,
    **settings: Any,
) -> NumPyroPosterior:
    """Fit a NumPyro model by ``method`` (``smi``, ``svgd``, ``asvgd``, ``ovi``, ``map``, ``nuts``).

    ``settings`` are those of ``smi.fit`` (``num_stein_particles``, ``num_elbo_particles``,
    ``num_steps``, ``lr``, ``optimizer``, ``num_warmup``, ``num_samples``, ``num_chains``...);
    NumPyro's ``num_particles`` is accepted for ``num_elbo_particles``.
    """
    settings = renamed(settings)
    model_kwargs = model_kwargs or {}
    info = initialize_model(
        jax.random.PRNGKey(seed),
        model,
        model_args=model_args,
        model_kwargs=model_kwargs,
    )
    params = [name for name, site in info.model_trace.items() if site["type"] == "param"]
    if params:
        raise ValueError(
            f"the model has numpyro.param site(s) {', '.join(params)}: smi.numpyro.fit infers "
            "the latent sample sites only and would keep them at their initial values; give "
            "each a prior (numpyro.sample) or pass its value to the model as data"
        )
    flat0, unravel = ravel_pytree(info.param_info.z)
    dim = int(flat0.shape[0])
    if dim == 0:
        raise ValueError("the model has no latent sites to infer")
    plates = _subsampled_plates(info.model_trace)
    if plates and method == "nuts":
        raise ValueError(
            f"NUTS needs the full data; plate(s) {', '.join(plates)} subsample: use a "
            "variational method or drop subsample_size"
        )
    postprocess = info.postprocess_fn
    if plates:
        fixed = _with_traced_params(model, info.model_trace)
        logdensity = _subsampled_log_density(fixed, model_args, model_kwargs, unravel, seed)
        postprocess = _subsampled_postprocess(fixed, model_args, model_kwargs, seed)
    else:
        logdensity = full_log_density(info.potential_fn, unravel)
    posterior = _fit_density(logdensity, dim, method, seed=seed, **settings)
    observed = {} if plates else _observed_sites(info.model_trace)
    return NumPyroPosterior(posterior, unravel, postprocess, seed, observed)


def _observed_sites(model_trace: dict[str, Any]) -> dict[str, np.ndarray]:
    """The values of the model's observed sample sites, by name."""
    return {
        name: np.asarray(site["value"])
        for name, site in model_trace.items()
        if site["type"] == "sample" and site.get("is_observed")
    }


def _subsampled_plates(model_trace: dict[str, Any]) -> list[str]:
    """Names of the plates that draw a subsample (``subsample_size`` below the plate's size)."""
    return [
        name
        for name, site in model_trace.items()
        if site["type"] == "plate" and site["args"][1] not in (None, site["args"][0])
    ]


def _with_traced_params(model: Callable[..., Any], model_trace: dict[str, Any]) -> Any:
    """``model`` with its ``param``/``mutable`` sites fixed at the traced values (as
    ``initialize_model``'s own potential has them)."""
    params = {
        name: site["value"]
        for name, site in model_trace.items()
        if site["type"] in ("param", "mutable")
    }
    return substitute(model, data=params)


def _subsampled_key(seed: int) -> Any:
    return jax.random.fold_in(jax.random.PRNGKey(seed), 0x5B5A)


def _subsampled_postprocess(
    fixed: Any, model_args: tuple[Any, ...], model_kwargs: dict[str, Any], seed: int
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Unconstrained → constrained values and deterministic sites, replaying the model under
    one fixed seed (a subsampled plate needs a key; deterministic sites computed from the
    data see that one subsample)."""
    key = _subsampled_key(seed)

    def postprocess(params: dict[str, Any]) -> dict[str, Any]:
        seeded = seed_handler(fixed, rng_seed=key)
        return constrain_fn(seeded, model_args, model_kwargs, params, return_deterministic=True)

    return postprocess


def _subsampled_log_density(
    fixed: Any,
    model_args: tuple[Any, ...],
    model_kwargs: dict[str, Any],
    unravel: Callable[[Any], Any],
    seed: int,
) -> LogDensity:
    """As ``_full_log_density``, with the model seeded by ``fold_in(key, call)``.

    Every call (one per engine step of a variational method) draws fresh plate subsamples;
    the key is shared across the vmap, so all K draws of the step see the same subsample.
    ``fixed`` is the model from ``_with_traced_params``.
    """
    base = _subsampled_key(seed)

    def log_joint(key: Any, flat: Any) -> Any:
        seeded = seed_handler(fixed, rng_seed=key)
        return -potential_energy(seeded, model_args, model_kwargs, unravel(flat))

    def step(call: Any, thetas: Any) -> Any:
        key = jax.random.fold_in(base, call)
        return jax.vmap(jax.value_and_grad(log_joint, argnums=1), in_axes=(None, 0))(key, thetas)

    batched = jax.jit(step)
    calls = [0]

    def logdensity(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = batched(np.uint32(calls[0] & 0xFFFFFFFF), theta)
        calls[0] += 1
        return as_numpy(*out)

    return logdensity
