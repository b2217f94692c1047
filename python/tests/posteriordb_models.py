"""The four posteriordb posteriors of ``shared/data/posteriordb`` as NumPyro models.

Each follows its ``model.stan`` line by line; ``load(name)`` returns the model, its arguments
and the reference draws (constrained, by Stan name, 10 chains x 1000 draws flattened).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

POSTERIORS = {
    "eight_schools": "eight_schools-eight_schools_noncentered",
    "kidiq": "kidiq-kidscore_momiq",
    "sblrc": "sblrc-blr",
    "arK": "arK-arK",
}


def data_dir() -> Path:
    """``SMI_DATA_DIR``, else the repository's ``../shared/data``."""
    env = os.environ.get("SMI_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def eight_schools(J: int, y: Any, sigma: Any) -> None:
    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([J]))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.deterministic("theta", theta_trans * tau + mu)
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def kidiq(N: int, kid_score: Any, mom_iq: Any) -> None:
    beta = numpyro.sample("beta", dist.ImproperUniform(dist.constraints.real, (), (2,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)


def sblrc(N: int, D: int, X: Any, y: Any) -> None:
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([D]))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


def arK(K: int, T: int, y: Any) -> None:
    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([K]))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    lags = jnp.stack([y[K - k : T - k] for k in range(1, K + 1)], axis=1)
    mu = alpha + lags @ beta
    numpyro.sample("y", dist.Normal(mu, sigma), obs=y[K:])


MODELS: dict[str, Callable[..., None]] = {
    "eight_schools": eight_schools,
    "kidiq": kidiq,
    "sblrc": sblrc,
    "arK": arK,
}


def load(name: str) -> tuple[Callable[..., None], dict[str, Any], dict[str, np.ndarray]]:
    """The model, its keyword arguments and the reference draws of posterior ``name``."""
    folder = data_dir() / "posteriordb" / POSTERIORS[name]
    raw = json.loads((folder / "data.json").read_text())
    model = MODELS[name]
    wanted = inspect.signature(model).parameters
    args: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in wanted:
            continue  # data the model does not use (e.g. kidiq's mom_hs)
        args[key] = (
            jnp.asarray(np.asarray(value, dtype=np.float64))
            if isinstance(value, list)
            else int(value)
        )
    chains = json.loads((folder / "reference_draws.json").read_text())
    reference = {
        key: np.concatenate([np.asarray(c[key], dtype=np.float64) for c in chains])
        for key in chains[0]
    }
    return model, args, reference


def by_stan_name(samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """NumPyro's site arrays (draws first) as Stan's flattened names (``beta[1]``, ...)."""
    out: dict[str, np.ndarray] = {}
    for site, value in samples.items():
        value = np.asarray(value)
        if value.ndim == 1:
            out[site] = value
        else:
            for i in range(value.shape[1]):
                out[f"{site}[{i + 1}]"] = value[:, i]
    return out


def max_standardised_error(
    samples: dict[str, np.ndarray], reference: dict[str, np.ndarray]
) -> float:
    """max over parameters of |mean − reference mean| / reference sd."""
    ours = by_stan_name(samples)
    missing = set(reference) - set(ours)
    assert not missing, f"parameters missing from the fit: {sorted(missing)}"
    return max(abs(ours[k].mean() - v.mean()) / v.std() for k, v in reference.items())
