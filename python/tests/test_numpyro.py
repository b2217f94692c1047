"""smi.numpyro.fit on small NumPyro models."""

from __future__ import annotations

import numpy as np
import pytest

numpyro = pytest.importorskip("numpyro")
import jax.numpy as jnp
import numpyro.distributions as dist
import smi.numpyro as snp

numpyro.enable_x64()


def normal_model(y: jnp.ndarray) -> None:
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    numpyro.deterministic("mu2", 2 * mu)
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


Y = jnp.asarray(np.random.default_rng(0).normal(3.0, 1.5, size=200))


def test_nuts_samples_are_constrained_dicts() -> None:
    post = snp.fit(normal_model, Y, method="nuts", num_warmup=300, num_samples=300, num_chains=2)
    s = post.get_samples()
    assert set(s) == {"mu", "sigma", "mu2"}
    assert s["mu"].shape == (600,)
    assert np.all(s["sigma"] > 0)
    np.testing.assert_allclose(s["mu2"], 2 * s["mu"])
    # The posterior of mu is about N(mean(y), 1.5/sqrt(200) = 0.11): 0.1 is ~1 posterior sd,
    # far above the Monte Carlo error of 600 draws.
    assert abs(s["mu"].mean() - float(Y.mean())) < 0.1
    assert abs(s["sigma"].mean() - float(Y.std())) < 0.15


def test_smi_gives_draws_from_the_mixture() -> None:
    post = snp.fit(normal_model, Y, method="smi", seed=1)
    s = post.get_samples(1000)
    assert s["mu"].shape == (1000,)
    assert abs(s["mu"].mean() - float(Y.mean())) < 0.1
    with pytest.raises(ValueError):
        post.get_samples(0)


def test_numpyro_names_are_accepted() -> None:
    post = snp.fit(normal_model, Y, method="ovi", num_particles=4, num_steps=10)
    assert post.method == "ovi"
    with pytest.raises(ValueError, match="not both"):
        snp.fit(normal_model, Y, method="ovi", num_particles=4, num_elbo_particles=4)
