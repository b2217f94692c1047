"""A Bayesian neural network fitted with Stein mixtures, written against NumPyro's
``numpyro.contrib.einstein`` API in the manner of NumPyro's ``examples/stein_bnn.py``: a
one-hidden-layer ReLU network with Gamma priors on the precisions, data subsampled by a plate,
an ``AutoNormal`` guide, ``Adagrad``, the RBF kernel and ``MixtureGuidePredictive``.

``test_einstein.py`` runs this file as written (NumPyro's engine) and with its einstein import
line changed to ``smi.numpyro.einstein`` (smi's); ``python/bench/einstein.py`` times both. Nothing
else in the text changes.
"""

import time

import jax.numpy as jnp
import numpy as np
import numpyro
from jax import random
from numpyro.contrib.einstein import MixtureGuidePredictive, RBFKernel, SteinVI
from numpyro.distributions import Gamma, Normal
from numpyro.infer import init_to_uniform
from numpyro.infer.autoguide import AutoNormal
from numpyro.optim import Adagrad


def model(x, y=None, hidden_dim=20, subsample_size=64):
    prec_nn = numpyro.sample("prec_nn", Gamma(1.0, 0.1))
    n, m = x.shape
    sd = 1.0 / jnp.sqrt(prec_nn)
    w1 = numpyro.sample("nn_w1", Normal(0.0, sd).expand((m, hidden_dim)).to_event(2))
    b1 = numpyro.sample("nn_b1", Normal(0.0, sd).expand((hidden_dim,)).to_event(1))
    w2 = numpyro.sample("nn_w2", Normal(0.0, sd).expand((hidden_dim,)).to_event(1))
    b2 = numpyro.sample("nn_b2", Normal(0.0, sd))
    prec_obs = numpyro.sample("prec_obs", Gamma(1.0, 0.1))
    with numpyro.plate("data", n, subsample_size=min(subsample_size, n), dim=-1):
        batch_x = numpyro.subsample(x, event_dim=1)
        batch_y = numpyro.subsample(y, event_dim=0) if y is not None else None
        loc = jnp.maximum(batch_x @ w1 + b1, 0.0) @ w2 + b2
        numpyro.sample("y", Normal(loc, 1.0 / jnp.sqrt(prec_obs)), obs=batch_y)


def data(seed=0, n=256):
    """y = sin(2x) + N(0, 0.1^2) on x ~ U(-2, 2), standardised; a test grid of 100 points."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(n, 1))
    y = np.sin(2.0 * x[:, 0]) + 0.1 * rng.standard_normal(n)
    x_test = np.linspace(-2.0, 2.0, 100)[:, None]
    y_test = np.sin(2.0 * x_test[:, 0])
    mean, sd = y.mean(), y.std()
    return jnp.asarray(x), jnp.asarray((y - mean) / sd), jnp.asarray(x_test), (y_test - mean) / sd


def main(num_steps=2000, seed=0, progress_bar=False):
    """Fits the network; returns the test RMSE of the predictive mean (standardised units),
    the run's wall seconds and its losses."""
    x, y, x_test, y_test = data(seed)
    rng_key, pred_key = random.split(random.PRNGKey(seed))
    guide = AutoNormal(model, init_loc_fn=init_to_uniform(radius=1.0))
    stein = SteinVI(
        model,
        guide,
        Adagrad(0.5),
        RBFKernel(),
        repulsion_temperature=1.0,
        num_stein_particles=5,
        num_elbo_particles=10,
    )
    start = time.perf_counter()
    result = stein.run(
        rng_key, num_steps, x, y, hidden_dim=20, subsample_size=64, progress_bar=progress_bar
    )
    seconds = time.perf_counter() - start
    predictive = MixtureGuidePredictive(
        model, guide, params=result.params, num_samples=200, guide_sites=stein.guide_sites
    )
    y_pred = predictive(pred_key, x_test, subsample_size=x_test.shape[0])["y"]
    rmse = float(np.sqrt(np.mean((np.asarray(y_pred).mean(0) - y_test) ** 2)))
    return {"rmse": rmse, "seconds": seconds, "losses": np.asarray(result.losses)}


if __name__ == "__main__":
    print(main(progress_bar=True))
