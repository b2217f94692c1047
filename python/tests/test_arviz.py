"""ArviZ output of every front end and method: ``az.summary`` reads it, and its groups hold what
the fit holds (the same draws, NUTS's chains and statistics, a mixture's components)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

az = pytest.importorskip("arviz")
xr = pytest.importorskip("xarray")

import smi
from smi import _arviz

METHODS = ("smi", "svgd", "asvgd", "ovi", "map", "nuts")


def logdensity(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -0.5 * (theta**2).sum(axis=1), -theta


def _fit(method: str) -> smi.Posterior:
    settings: dict[str, int] = {"num_steps": 200}
    if method == "nuts":
        settings = {"num_warmup": 100, "num_samples": 50, "num_chains": 2}
    elif method in ("smi", "svgd", "asvgd"):
        settings["num_stein_particles"] = 4
    return smi.fit(logdensity, dim=3, method=method, seed=0, **settings)


def _summary(data: object) -> object:
    with warnings.catch_warnings():
        # ArviZ warns that one chain cannot give R-hat (the variational fits' draws).
        warnings.simplefilter("ignore")
        return az.summary(data)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_data_that_az_summary_reads(method: str) -> None:
    post = _fit(method)
    data = post.to_arviz(num_samples=120, seed=3, observed_data={"y": np.arange(4.0)})
    table = _summary(data)
    assert list(table.index) == ["theta[0]", "theta[1]", "theta[2]"]
    theta = data.posterior["theta"]
    attrs = data.posterior.attrs
    assert attrs["method"] == method and attrs["termination"] == post.termination
    np.testing.assert_array_equal(data.observed_data["y"].values, np.arange(4.0))
    if method == "nuts":
        assert theta.shape == (2, 50, 3)
        np.testing.assert_array_equal(theta.values.reshape(100, 3), post.draws())
        stats = data.sample_stats
        assert set(stats.data_vars) == {
            "diverging",
            "energy",
            "tree_depth",
            "step_size",
            "lp",
            "n_steps",
        }
        assert stats["diverging"].shape == (2, 50)
        assert int(stats["diverging"].values.sum()) == post.divergences
        assert "mixture" not in data.groups()
    else:
        # One chain of the draws `sample` gives, with the particle each came from.
        assert theta.shape == (1, 120, 3)
        np.testing.assert_array_equal(theta.values[0], post.sample(120, seed=3))
        comp = data.sample_stats["component"].values[0]
        m = post.particles.shape[0]
        assert comp.min() >= 0 and comp.max() < m
        mix = data["mixture"]
        np.testing.assert_array_equal(mix["location"].values, post.locations)
        np.testing.assert_array_equal(mix["scale"].values, post.scales)
        if method in ("svgd", "asvgd", "map"):
            # Point masses: every draw is its component's location.
            np.testing.assert_array_equal(theta.values[0], post.locations[comp])
        assert data["optimization"]["loss"].shape == (post.steps,)


def test_a_datatree_holds_the_same_groups() -> None:
    post = _fit("smi")
    tree = _arviz.build(post, 50, 0, None, datatree=True)
    idata = _arviz.build(post, 50, 0, None, datatree=False)
    assert isinstance(tree, xr.DataTree)
    assert set(tree.children) == {"posterior", "sample_stats", "mixture", "optimization"}
    xr.testing.assert_identical(tree["posterior"].to_dataset(), idata.posterior)
    with pytest.raises(ValueError, match="num_samples"):
        post.to_arviz(num_samples=0)
    with pytest.raises(TypeError, match="observed_data"):
        post.to_arviz(observed_data=[1.0])


numpyro = pytest.importorskip("numpyro")


def test_numpyro_fits_name_their_sites() -> None:
    import jax.numpy as jnp
    import smi.numpyro as snp
    from test_numpyro import normal_model as model

    numpyro.enable_x64()
    y = jnp.asarray(np.random.default_rng(0).normal(3.0, 1.5, size=40))

    nuts = snp.fit(model, y, method="nuts", num_warmup=100, num_samples=60, num_chains=2)
    data = nuts.to_arviz()
    assert set(data.posterior.data_vars) == {"mu", "sigma", "mu2"}
    assert data.posterior["mu"].shape == (2, 60)
    np.testing.assert_array_equal(data.posterior["mu"].values.reshape(-1), nuts.get_samples()["mu"])
    np.testing.assert_array_equal(data.observed_data["y"].values, np.asarray(y))
    assert list(_summary(data).index) == ["mu", "mu2", "sigma"]

    vi = snp.fit(model, y, method="smi", num_steps=200)
    data = vi.to_arviz(num_samples=80)
    assert data.posterior["sigma"].shape == (1, 80)
    np.testing.assert_array_equal(data.posterior["sigma"].values[0], vi.get_samples(80)["sigma"])
    assert np.all(data.posterior["sigma"].values > 0)
    assert "component" in data.sample_stats
    _summary(data)
