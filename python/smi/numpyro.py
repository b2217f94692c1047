"""NumPyro models through smi: ``smi.numpyro.fit(model, *args, method="smi")``.

The model's unconstrained potential comes from NumPyro's own ``initialize_model``; its
parameters are flattened with ``ravel_pytree``, and each engine step evaluates all K draws in
one jitted ``vmap(value_and_grad(...))`` call. Results come back in NumPyro's shapes: a dict of
site name to constrained draws (draws first), deterministic sites included.

Requires ``jax`` and ``numpyro`` (an optional extra of this package).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import Posterior
from . import fit as _fit_density

try:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import initialize_model
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("smi.numpyro needs jax and numpyro: pip install jax numpyro") from err

__all__ = ["NumPyroPosterior", "fit"]

#: Draws ``get_samples`` returns by default for a variational method.
DEFAULT_NUM_SAMPLES = 4000

# NumPyro's names → smi's settings of the same meaning.
_RENAMES = {"num_particles": "num_elbo_particles"}


class NumPyroPosterior:
    """A fit of a NumPyro model: the engine's ``Posterior`` plus the model's own structure.

    Attributes:
        posterior: the ``smi.Posterior`` on the flattened unconstrained space.
        method: the method's name.
    """

    def __init__(
        self,
        posterior: Posterior,
        unravel: Callable[[Any], dict[str, Any]],
        postprocess: Callable[[dict[str, Any]], dict[str, Any]],
        seed: int,
    ) -> None:
        self.posterior = posterior
        self.method = posterior.method
        self._unravel = unravel
        self._postprocess = jax.jit(jax.vmap(lambda flat: postprocess(unravel(flat))))
        self._seed = seed

    def get_samples(self, num_samples: int | None = None) -> dict[str, np.ndarray]:
        """Constrained draws by site name, draws first (as ``MCMC.get_samples()``).

        For NUTS, the draws themselves (``num_samples`` must be None); for the variational
        methods ``num_samples`` draws from the fitted mixture (default 4000).
        """
        if self.method == "nuts":
            if num_samples is not None:
                raise ValueError("NUTS returns its own draws; leave num_samples unset")
            flat = self.posterior.draws()
        else:
            n = DEFAULT_NUM_SAMPLES if num_samples is None else int(num_samples)
            if n < 1:
                raise ValueError(f"num_samples must be at least 1, got {n}")
            flat = self.posterior.sample(n, seed=self._seed)
        out = self._postprocess(jnp.asarray(flat))
        return {name: np.asarray(value) for name, value in out.items()}

    def __repr__(self) -> str:
        return f"NumPyroPosterior({self.posterior!r})"


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
    for old, new in _RENAMES.items():
        if old in settings:
            if new in settings:
                raise ValueError(f"give {old} or {new}, not both")
            settings[new] = settings.pop(old)
    info = initialize_model(
        jax.random.PRNGKey(seed),
        model,
        model_args=model_args,
        model_kwargs=model_kwargs or {},
    )
    flat0, unravel = ravel_pytree(info.param_info.z)
    dim = int(flat0.shape[0])
    if dim == 0:
        raise ValueError("the model has no latent sites to infer")
    potential = info.potential_fn

    def neg_potential(flat: Any) -> Any:
        return -potential(unravel(flat))

    batched = jax.jit(jax.vmap(jax.value_and_grad(neg_potential)))

    def logdensity(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logp, grad = batched(jnp.asarray(theta))
        return np.asarray(logp, dtype=np.float64), np.asarray(grad, dtype=np.float64)

    posterior = _fit_density(logdensity, dim, method, seed=seed, **settings)
    return NumPyroPosterior(posterior, unravel, info.postprocess_fn, seed)
