"""``smi.numpyro.einstein``: NumPyro's einstein API on smi's engine.

The script ``einstein_style.py`` is written against ``numpyro.contrib.einstein``; these tests run
it with only its import line changed, and run it as written on NumPyro for a few steps to show
the text is a working NumPyro script.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import smi.numpyro.einstein as ein
from numpyro.infer.autoguide import AutoDelta, AutoNormal
from numpyro.optim import SGD, Adagrad, Adam

SCRIPT = Path(__file__).with_name("einstein_style.py")
NUMPYRO_IMPORT = "from numpyro.contrib.einstein import "
SMI_IMPORT = "from smi.numpyro.einstein import "


def load_script(engine: str) -> types.ModuleType:
    """The script as a module, its einstein import pointing at ``engine``'s."""
    text = SCRIPT.read_text()
    assert text.count(NUMPYRO_IMPORT) == 1
    if engine == "smi":
        text = text.replace(NUMPYRO_IMPORT, SMI_IMPORT)
    module = types.ModuleType(f"einstein_style_{engine}")
    # The point of the test is running the script's own text: exec of a file of this folder.
    exec(compile(text, str(SCRIPT), "exec"), module.__dict__)  # noqa: S102
    return module


def test_the_script_runs_on_smi_with_only_its_import_changed() -> None:
    out = load_script("smi").main(num_steps=2000)
    # The standardised target has sd 1; the noise is 0.1 / sd(y) ≈ 0.14. A network that learnt
    # the sine lands well under 0.3 (seed 0: 0.069, python/bench/einstein.py); one that predicts the mean has
    # RMSE ≈ 1.
    assert out["rmse"] < 0.3, out["rmse"]
    assert out["losses"].shape == (2000,)
    assert np.all(np.isfinite(out["losses"]))


def test_the_script_runs_as_written_on_numpyro() -> None:
    out = load_script("numpyro").main(num_steps=20)
    assert out["losses"].shape == (20,)


def normal_model(y: Any) -> None:
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    with numpyro.plate("n", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


Y = jnp.asarray(np.random.default_rng(0).normal(1.0, 2.0, size=200))


def test_params_have_numpyro_names_and_shapes_and_feed_mixture_guide_predictive() -> None:
    guide = AutoNormal(normal_model)
    stein = ein.SteinVI(normal_model, guide, Adagrad(0.1), ein.RBFKernel(), num_stein_particles=4)
    result = stein.run(jax.random.PRNGKey(0), 1500, Y, progress_bar=False)
    assert set(result.params) == {
        "mu_auto_loc",
        "mu_auto_scale",
        "sigma_auto_loc",
        "sigma_auto_scale",
    }
    assert all(np.shape(v) == (4,) for v in result.params.values())
    assert stein.guide_sites == set(result.params)
    # The posterior of mu has mean ≈ ȳ and sd ≈ 2 / √200 = 0.14.
    assert abs(np.mean(result.params["mu_auto_loc"]) - float(Y.mean())) < 0.1
    draws = ein.MixtureGuidePredictive(
        normal_model,
        guide,
        result.params,
        guide_sites=stein.guide_sites,
        num_samples=500,
        return_sites=["mu", "sigma", "y"],
    )(jax.random.PRNGKey(1), Y)
    assert draws["mu"].shape == (500,) and draws["y"].shape == (500, 200)
    assert abs(float(draws["sigma"].mean()) - float(Y.std())) < 0.2
    assert result.state.posterior.method == "smi"


@pytest.mark.parametrize("cls", [ein.SVGD, ein.ASVGD])
def test_svgd_and_asvgd_give_constrained_point_masses(cls: type) -> None:
    stein = cls(normal_model, Adam(0.05), ein.RBFKernel(), num_stein_particles=6)
    result = stein.run(jax.random.PRNGKey(0), 1500, Y, progress_bar=False)
    assert set(result.params) == {"mu_auto_loc", "sigma_auto_loc"}
    assert result.params["mu_auto_loc"].shape == (6,)
    assert np.all(result.params["sigma_auto_loc"] > 0)
    assert isinstance(stein.guide, AutoDelta)
    assert abs(np.mean(result.params["mu_auto_loc"]) - float(Y.mean())) < 0.2


def test_kernels_ours_and_numpyros_give_the_same_engine_settings() -> None:
    from numpyro.contrib import einstein as npe

    m = 5
    pairs = [
        (ein.RBFKernel(), npe.RBFKernel()),
        (ein.RBFKernel(mode="vector"), npe.RBFKernel(mode="vector")),
        (ein.RBFKernel(mode="matrix"), npe.RBFKernel(mode="matrix")),
        (ein.IMQKernel(const=2.0, expon=-0.3), npe.IMQKernel(const=2.0, expon=-0.3)),
        (ein.LinearKernel(), npe.LinearKernel()),
        (ein.RandomFeatureKernel(), npe.RandomFeatureKernel()),
        (
            ein.MixtureKernel([0.5, 0.5], [ein.RBFKernel(), ein.IMQKernel()]),
            npe.MixtureKernel([0.5, 0.5], [npe.RBFKernel(), npe.IMQKernel()]),
        ),
    ]
    for ours, theirs in pairs:
        assert ours.settings(m) == ein._kernel_settings(theirs, m)
    assert ein.RBFKernel().settings(m)["bandwidth_factor"] == "inverse_log"
    assert ein.RBFKernel(bandwidth_factor=lambda n: 0.5).settings(m)["bandwidth_factor"] == {
        "constant": 0.5
    }
    assert ein.RBFKernel(mode="matrix").settings(m)["mode"] == {"matrix": "norm_diag"}


def test_optimizers_are_read_from_numpyro_objects_and_others_are_refused() -> None:
    assert ein._optimizer(Adagrad(0.5)) == {"optimizer": "adagrad", "lr": 0.5, "constant_lr": True}
    assert ein._optimizer(Adam(0.01))["lr"] == 0.01
    assert ein._optimizer(SGD(0.2))["optimizer"] == "sgd"
    with pytest.raises(ValueError, match="b1"):
        ein._optimizer(Adam(0.01, b1=0.5))
    with pytest.raises(ValueError, match="schedule"):
        ein._optimizer(Adam(lambda i: 0.1 / (1 + i)))
    with pytest.raises(ValueError, match="not available"):
        ein._optimizer(numpyro.optim.RMSProp(0.1))


def test_unsupported_guides_kernels_and_states_are_refused_with_reasons() -> None:
    from numpyro.infer.autoguide import AutoMultivariateNormal

    with pytest.raises(ValueError, match="AutoNormal"):
        ein.SteinVI(
            normal_model, AutoMultivariateNormal(normal_model), Adagrad(0.1), ein.RBFKernel()
        )
    from numpyro.contrib.einstein import GraphicalKernel

    with pytest.raises(ValueError, match="not available"):
        ein.SteinVI(normal_model, AutoNormal(normal_model), Adagrad(0.1), GraphicalKernel())
    stein = ein.SteinVI(normal_model, AutoNormal(normal_model), Adagrad(0.1), ein.RBFKernel())
    with pytest.raises(ValueError, match="init_state"):
        stein.run(jax.random.PRNGKey(0), 10, Y, init_state=object(), progress_bar=False)


def test_keys_give_seeds_and_the_same_key_the_same_result() -> None:
    assert ein._seed(jax.random.PRNGKey(3)) == ein._seed(jax.random.key(3))
    assert ein._seed(jax.random.PRNGKey(3)) != ein._seed(jax.random.PRNGKey(4))
    stein = ein.SteinVI(
        normal_model, AutoNormal(normal_model), Adagrad(0.1), ein.RBFKernel(), num_stein_particles=3
    )
    a = stein.run(jax.random.PRNGKey(5), 200, Y, progress_bar=False)
    b = stein.run(jax.random.PRNGKey(5), 200, Y, progress_bar=False)
    np.testing.assert_array_equal(a.params["mu_auto_loc"], b.params["mu_auto_loc"])
