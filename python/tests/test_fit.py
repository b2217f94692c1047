"""smi.fit on plain NumPy log densities: answers, errors, signals."""

from __future__ import annotations

import _thread
import inspect
import signal
import threading
from typing import Any

import numpy as np
import pytest
import smi

MU = np.array([1.0, -2.0])
SD = np.array([0.5, 2.0])


def gaussian(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = (theta - MU) / SD
    return -0.5 * (z**2).sum(axis=1), -z / SD


def test_ovi_recovers_a_gaussian() -> None:
    # Mean-field VI is exact on a diagonal Gaussian; 3000 Adam steps at 0.05 with 20 ELBO
    # draws leave a Monte Carlo error of a few percent of the sd (tolerance 0.1 sd, 15 % var).
    post = smi.fit(
        gaussian, 2, "ovi", num_steps=3000, converge=False, lr=0.05, num_elbo_particles=20, seed=1
    )
    assert np.all(np.abs(post.mean - MU) < 0.1 * SD), post.mean
    assert np.all(np.abs(post.var / SD**2 - 1) < 0.15), post.var
    assert post.method == "ovi" and post.steps == 3000 and post.termination == "max_steps"
    assert post.elbos.shape == (3000,) and np.isfinite(post.elbos).all()
    table = post.summary()
    assert "theta[1]" in table and "theta[2]" in table
    draws = post.sample(4000, seed=3)
    assert draws.shape == (4000, 2)
    np.testing.assert_array_equal(draws, post.sample(4000, seed=3))


def test_smi_calls_python_once_per_step() -> None:
    # Started as drawn: the Laplace start (the default for small d) adds its climbs' calls.
    post = smi.fit(
        gaussian,
        2,
        "smi",
        num_stein_particles=4,
        num_steps=50,
        converge=False,
        quality_draws=0,
        start="draw",
    )
    assert post.num_calls == 50 and post.khat is None
    assert post.losses.shape == (50,)


def test_nuts_recovers_a_gaussian() -> None:
    # 2 chains x 500 draws: the Monte Carlo sd of the mean is about sd/sqrt(ESS ~ 1000) = 0.03 sd;
    # the tolerance of 0.15 sd is 5 Monte Carlo sds.
    post = smi.fit(gaussian, 2, "nuts", num_warmup=300, num_samples=500, num_chains=2, seed=2)
    assert np.all(np.abs(post.mean - MU) < 0.15 * SD), post.mean
    assert np.all(np.abs(post.var / SD**2 - 1) < 0.2), post.var
    assert post.divergences == 0


def test_defaults_converge() -> None:
    # Library defaults only: Adam(0.1) with reduce-on-plateau, S = 10, the convergence rule.
    # Mean-field VI is exact here; 0.05 sd and 5 % of the variance are several Monte Carlo sds
    # of the converged fit (measured errors are ~0.01 sd).
    post = smi.fit(gaussian, 2, "ovi", seed=0)
    assert post.termination == "converged", post
    assert np.all(np.abs(post.mean - MU) < 0.05 * SD), post.mean
    assert np.all(np.abs(post.var / SD**2 - 1) < 0.05), post.var


def test_same_seed_same_result() -> None:
    a = smi.fit(gaussian, 2, "svgd", num_steps=100, seed=5)
    b = smi.fit(gaussian, 2, "svgd", num_steps=100, seed=5)
    np.testing.assert_array_equal(a.mean, b.mean)


def test_fit_forwards_every_parameter_of_the_engine() -> None:
    # The stub of the extension's fit spells only its first three parameters; smi.fit must
    # take the engine's parameters by the same names, kinds and defaults.
    from smi import _smi

    def params(fn: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(smi.fit) == params(_smi.fit)


def test_bad_settings_raise_value_error() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        smi.fit(gaussian, 2, "hmc")
    with pytest.raises(ValueError, match="lr"):
        smi.fit(gaussian, 2, "ovi", lr=-1.0)
    with pytest.raises(ValueError, match="num_stein_particles"):
        smi.fit(gaussian, 2, "ovi", num_stein_particles=3)
    with pytest.raises(ValueError, match="optimizer"):
        smi.fit(gaussian, 2, "smi", optimizer="rmsprop")
    with pytest.raises(ValueError, match="callable"):
        smi.fit(3, 2)  # type: ignore[arg-type]


def test_bad_return_values_are_explained() -> None:
    with pytest.raises(ValueError, match=r"grad has shape"):
        smi.fit(lambda t: (np.zeros(len(t)), np.zeros(len(t))), 2, "map", num_steps=5)
    with pytest.raises(ValueError, match=r"logp has shape"):
        smi.fit(lambda t: (np.zeros(1), np.zeros_like(t)), 2, "smi", num_steps=5)
    with pytest.raises(ValueError, match="returned something else"):
        smi.fit(lambda t: 1.0, 2, "map", num_steps=5)


class Boom(Exception):
    pass


def test_an_exception_in_the_model_is_re_raised_with_its_traceback() -> None:
    calls = []

    def failing(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(1)
        if len(calls) == 7:
            raise Boom("step 7")
        return gaussian(theta)

    with pytest.raises(Boom, match="step 7") as info:
        smi.fit(failing, 2, "smi", num_steps=100)
    assert len(calls) == 7, "the fit stops at the first failure"
    assert any(entry.name == "failing" for entry in info.traceback)


def test_non_finite_values_are_an_smi_error() -> None:
    nan = lambda t: (np.full(len(t), np.nan), np.full_like(t, np.nan))
    post = smi.fit(nan, 2, "map", num_steps=5, converge=False)  # non-finite steps are skipped
    assert post.steps == 5
    with pytest.raises(smi.SmiError):
        smi.fit(nan, 2, "nuts", num_warmup=5, num_samples=5, num_chains=1)


def test_ctrl_c_stops_a_long_fit() -> None:
    # Python's own Ctrl-C handler, also where the runner was started with SIGINT ignored (a
    # background job of a shell without job control): `interrupt_main` does nothing then.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # no early stopping: the plateau rule could end the fit before the interrupt
            smi.fit(gaussian, 2, "smi", num_steps=10_000_000, converge=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
