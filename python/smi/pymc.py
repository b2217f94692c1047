"""PyMC models through smi: ``smi.pymc.fit(model, method="smi")``.

The model's log density on its unconstrained value variables (``model.value_vars``: ``sigma``
as ``sigma_log__`` and so on, as PyMC's samplers see it) is compiled through PyMC's JAX backend
(``pymc.sampling.jax.get_jaxified_logp``, what ``pm.sample(nuts_sampler="numpyro")`` uses); the
value variables are flattened with ``ravel_pytree`` and each engine step evaluates all K draws
in one jitted ``vmap(value_and_grad(...))`` call. Results come back as ``pm.sample`` names and
shapes them: the free random variables, constrained, and the deterministics, draws first
(``get_samples``), or as ArviZ data (``to_arviz``) with the observed data.

Requires ``pymc`` (>= 5) and ``jax`` (the extra ``smi[pymc]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import fit as _fit_density
from ._jax_model import ModelPosterior, full_log_density, renamed

try:
    import jax
    import jax.numpy as jnp
    import pymc as pm
    from jax.flatten_util import ravel_pytree
    from pymc.sampling.jax import get_jaxified_graph, get_jaxified_logp
    from pymc.util import get_default_varnames
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError('smi.pymc needs pymc and jax: pip install "smi[pymc]"') from err

__all__ = ["PyMCPosterior", "fit"]


class PyMCPosterior(ModelPosterior):
    """A fit of a PyMC model: the engine's ``Posterior`` plus the model's variables by name
    (constrained, deterministics included; see :class:`smi._jax_model.ModelPosterior`).

    Attributes:
        posterior: the ``smi.Posterior`` on the flattened unconstrained value variables.
        method: the method's name.
    """


def _observed(model: Any) -> dict[str, np.ndarray]:
    """The data of the model's observed variables, by name."""
    out = {}
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        data = getattr(value, "data", None)
        out[rv.name] = np.asarray(data if data is not None else value.eval())
    return out


def fit(
    model: Any = None,
    *,
    method: str = "smi",
    seed: int = 0,
    **settings: Any,
) -> PyMCPosterior:
    """Fit a PyMC model by ``method`` (``smi``, ``svgd``, ``asvgd``, ``ovi``, ``map``,
    ``nuts``).

    ``model`` is a ``pm.Model`` (default: the model of the enclosing ``with`` block).
    ``settings`` are those of ``smi.fit`` (``num_stein_particles``, ``num_elbo_particles``,
    ``num_steps``, ``lr``, ``num_warmup``, ``num_samples``, ``num_chains``...); NumPyro's
    ``num_particles`` is accepted for ``num_elbo_particles``. JAX's 64-bit mode is switched on
    (``jax_enable_x64``): PyMC's log densities are float64.

    Raises:
        ValueError: a model without free variables, or one with discrete free variables
            (the engine needs gradients).
    """
    settings = renamed(settings)
    jax.config.update("jax_enable_x64", True)
    model = pm.modelcontext(model)
    discrete = [rv.name for rv in model.free_RVs if rv.type.dtype.startswith(("int", "uint"))]
    if discrete:
        raise ValueError(
            f"the model has discrete free variable(s) {', '.join(discrete)}: the engine needs "
            "gradients; marginalise them out or observe them"
        )
    value_vars = list(model.value_vars)
    if not value_vars:
        raise ValueError("the model has no free variables to infer")
    point = model.initial_point()
    flat0, unravel = ravel_pytree(
        [jnp.asarray(point[v.name], dtype=jnp.float64) for v in value_vars]
    )
    # PyMC's flag reads backwards: negative_logp=False gives −log p, the potential.
    potential = get_jaxified_logp(model, negative_logp=False)
    logdensity = full_log_density(potential, unravel)
    outputs = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
    graph = get_jaxified_graph(inputs=value_vars, outputs=outputs)
    names = [v.name for v in outputs]

    def postprocess(values: list[Any]) -> dict[str, Any]:
        return dict(zip(names, graph(*values), strict=True))

    posterior = _fit_density(logdensity, int(flat0.shape[0]), method, seed=seed, **settings)
    return PyMCPosterior(posterior, unravel, postprocess, seed, _observed(model))
