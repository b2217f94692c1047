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


def regression(x: jnp.ndarray, y: jnp.ndarray, batch: int = 100) -> None:
    w = numpyro.sample("w", dist.Normal(0.0, 10.0).expand([2]).to_event(1))
    c = numpyro.sample("c", dist.Normal(0.0, 10.0))
    numpyro.deterministic("w_sum", w.sum())
    with numpyro.plate("data", x.shape[0], subsample_size=batch) as idx:
        numpyro.sample("y", dist.Normal(x[idx] @ w + c, 1.0), obs=y[idx])


def regression_data(n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2))
    return x, x @ np.array([1.5, -0.7]) + 0.3 + rng.normal(size=n)


def test_subsampled_plate_recovers_the_full_data_posterior_mean() -> None:
    x, y = regression_data()
    # The exact posterior of (c, w) (ravel_pytree's order: sites sorted by name): Gaussian with
    # precision A'A + I/100 for the design A = [1, x] and unit noise.
    a = np.c_[np.ones(len(y)), x]
    precision = a.T @ a + np.eye(3) / 100.0
    mean = np.linalg.solve(precision, a.T @ y)
    sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    post = snp.fit(
        regression,
        jnp.asarray(x),
        jnp.asarray(y),
        method="ovi",
        seed=0,
        num_steps=4000,
        converge=False,
        lr=1e-3,
        constant_lr=True,
        init_radius=0.5,
    )
    # Mean-field VI of a Gaussian posterior has the exact mean; what is left is the jitter of
    # Adam(1e-3) on subsampled gradients (b = 100 of N = 1000) at the end of the run: at most
    # 0.37 posterior sd over seeds 0-4 (15 coordinates). 0.75 sd (~0.024) leaves room; a
    # subsample stuck at one batch of 100 (the posterior of that batch) misses by ~3 sd.
    z = (post.posterior.mean - mean) / sd
    assert np.all(np.abs(z) < 0.75), z
    s = post.get_samples(2000)
    assert s["w"].shape == (2000, 2)
    np.testing.assert_allclose(s["w_sum"], s["w"].sum(axis=1), rtol=1e-12)


def test_subsample_is_fresh_per_call_and_shared_by_the_draws() -> None:
    x, y = regression_data()
    info = snp.initialize_model(
        snp.jax.random.PRNGKey(0), regression, model_args=(jnp.asarray(x), jnp.asarray(y))
    )
    flat0, unravel = snp.ravel_pytree(info.param_info.z)
    fixed = snp._with_traced_params(regression, info.model_trace)
    logdensity = snp._subsampled_log_density(
        fixed, (jnp.asarray(x), jnp.asarray(y)), {}, unravel, 0
    )
    theta = np.tile(np.asarray(flat0), (4, 1))
    lp1, g1 = logdensity(theta)
    lp2, _ = logdensity(theta)
    # One subsample per call: the 4 identical draws get identical values ...
    np.testing.assert_array_equal(lp1, np.full(4, lp1[0]))
    np.testing.assert_array_equal(g1, np.tile(g1[0], (4, 1)))
    # ... and the next call (the next step) sees another batch of 100 of the 1000 points.
    assert lp2[0] != lp1[0]


def test_nuts_refuses_a_subsampled_plate() -> None:
    x, y = regression_data(200)
    with pytest.raises(ValueError, match="full data"):
        snp.fit(regression, jnp.asarray(x), jnp.asarray(y), method="nuts")
