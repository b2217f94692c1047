"""What the JAX front ends share (``smi.numpyro``, ``smi.pymc``): a model's potential as the
engine's batched log density, and the fit with the model's structure (sites by name,
constrained, deterministic sites included).

Requires ``jax``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from . import Posterior

try:
    import jax
    import jax.numpy as jnp
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("smi's model front ends need jax: pip install jax") from err

#: A batched log density: K draws (K x d) → (log p (K), ∇ log p (K x d)).
LogDensity = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def as_numpy(logp: Any, grad: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(logp, dtype=np.float64), np.asarray(grad, dtype=np.float64)


def full_log_density(potential: Callable[[Any], Any], unravel: Callable[[Any], Any]) -> LogDensity:
    """K draws → (log p, ∇ log p) in one jitted call, on the fixed full-data potential.

    The NumPy array goes to the jitted function as it is (a ``jnp.asarray`` first would be a
    dispatch of its own: it doubled the time of a call on the posteriordb models).
    """

    def neg_potential(flat: Any) -> Any:
        return -potential(unravel(flat))

    batched = jax.jit(jax.vmap(jax.value_and_grad(neg_potential)))

    def logdensity(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return as_numpy(*batched(theta))

    return logdensity


#: Draws ``get_samples`` returns by default for a variational method.
DEFAULT_NUM_SAMPLES = 4000

# NumPyro's names → smi's settings of the same meaning.
_RENAMES = {"num_particles": "num_elbo_particles"}


def renamed(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with NumPyro's names (``num_particles``) as smi's (``num_elbo_particles``)."""
    out = dict(settings)
    for old, new in _RENAMES.items():
        if old in out:
            if new in out:
                raise ValueError(f"give {old} or {new}, not both")
            out[new] = out.pop(old)
    return out


class ModelPosterior:
    """A fit of a JAX-traceable model (NumPyro, PyMC): the engine's ``Posterior`` plus the
    model's own structure.

    Attributes:
        posterior: the ``smi.Posterior`` on the flattened unconstrained space.
        method: the method's name.
    """

    def __init__(
        self,
        posterior: Posterior,
        unravel: Callable[[Any], Any],
        postprocess: Callable[[Any], dict[str, Any]],
        seed: int,
        observed: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.posterior = posterior
        self.method = posterior.method
        self._unravel = unravel
        self._postprocess = jax.jit(jax.vmap(lambda flat: postprocess(unravel(flat))))
        self._seed = seed
        self._observed = observed or {}

    def _constrained(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        out = self._postprocess(jnp.asarray(flat))
        return {name: np.asarray(value) for name, value in out.items()}

    def to_arviz(self, num_samples: int | None = None) -> Any:
        """The fit as ArviZ data (``pip install "smi[arviz]"``): an ``InferenceData`` for
        ArviZ < 1, a ``DataTree`` for ArviZ >= 1, that ``az.summary`` reads.

        The posterior holds the model's sites by name, constrained, deterministic sites
        included, as ``MCMC.get_samples`` names and shapes them: NUTS's chains and draws, or
        for a variational method one chain of ``num_samples`` mixture draws (default 4000,
        the draws ``get_samples`` gives). ``observed_data`` holds the model's observed sites
        (unless a plate subsamples them). The other groups (NUTS's sample statistics; a
        mixture's components, its particles and its ELBO trace) and the attributes are those
        of ``smi.Posterior.to_arviz``.
        """
        from . import _arviz

        n = DEFAULT_NUM_SAMPLES if num_samples is None else operator.index(num_samples)
        return _arviz.build(self.posterior, n, self._seed, self._observed, self._constrained)

    def get_samples(
        self, num_samples: int | None = None, *, reweighted: bool = False
    ) -> dict[str, np.ndarray]:
        """Constrained draws by site name, draws first (as ``MCMC.get_samples()``).

        For NUTS, the draws themselves (``num_samples`` must be None); for the variational
        methods ``num_samples`` draws from the fitted mixture (default 4000), or with
        ``reweighted=True`` draws resampled by their Pareto-smoothed importance weights
        (methods with a density: SMI, OVI; see ``khat``).
        """
        if self.method == "nuts":
            if num_samples is not None or reweighted:
                raise ValueError(
                    "NUTS returns its own draws; leave num_samples and reweighted unset"
                )
            flat = self.posterior.draws()
        else:
            n = DEFAULT_NUM_SAMPLES if num_samples is None else operator.index(num_samples)
            if n < 1:
                raise ValueError(f"num_samples must be at least 1, got {n}")
            if reweighted:
                flat = self.posterior.sample_reweighted(n, seed=self._seed)
            else:
                flat = self.posterior.sample(n, seed=self._seed)
        return self._constrained(flat)

    @property
    def termination(self) -> str:
        """Why the fit ended (``Posterior.termination``)."""
        return self.posterior.termination

    @property
    def khat(self) -> float | None:
        """The fit-quality diagnostic k-hat (``Posterior.khat``)."""
        return self.posterior.khat

    @property
    def warnings(self) -> list[str]:
        """What is wrong with the fit, in words (``Posterior.warnings``)."""
        return self.posterior.warnings

    @property
    def trusted(self) -> bool:
        """Whether the fit's own diagnostics find nothing wrong (``Posterior.trusted``)."""
        return self.posterior.trusted

    @property
    def skipped_steps(self) -> int:
        """Steps skipped for a non-finite value (``Posterior.skipped_steps``)."""
        return self.posterior.skipped_steps

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.posterior!r})"
