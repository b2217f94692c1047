"""Bad input and bad models on the Python surface: each ends in a clean error or in a result
that says it is not to be trusted; none kills the interpreter or lets a Rust panic through."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import smi


def _normal(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -0.5 * (theta**2).sum(axis=1), -theta


def _quiet_fit(*args, **kwargs):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return smi.fit(*args, **kwargs)


@pytest.fixture(scope="module")
def post() -> smi.Posterior:
    return smi.fit(_normal, 2, quality_draws=0)


# Item 1: every step skipped. A log density that is never finite, or whose gradient is never
# finite, used to end as "max_steps" with the starting particles as the posterior.
@pytest.mark.parametrize("method", ["smi", "ovi", "svgd", "map"])
def test_a_fit_whose_every_step_is_skipped_says_so(method: str) -> None:
    def never_finite(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(theta), np.nan), -theta

    with pytest.warns(UserWarning, match="skipped"):
        p = smi.fit(never_finite, 2, method=method, num_steps=300)
    assert p.termination == "diverged"
    assert not p.trusted
    assert p.skipped_steps == 300


def test_a_nan_gradient_is_a_skipped_step() -> None:
    def nan_grad(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -0.5 * (theta**2).sum(axis=1), np.full_like(theta, np.nan)

    p = _quiet_fit(nan_grad, 2, num_steps=300)
    assert p.termination == "diverged" and not p.trusted
    assert p.skipped_steps == 300
    assert any("skipped" in w for w in p.warnings)


def test_a_support_written_as_minus_infinity_is_not_trusted() -> None:
    # log p = -inf outside theta > 0: with K draws a step, some step has a draw outside.
    def half_line(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        inside = (theta > 0).all(axis=1)
        logp = np.where(inside, -0.5 * (theta**2).sum(axis=1), -np.inf)
        return logp, np.where(inside[:, None], -theta, 0.0)

    p = _quiet_fit(half_line, 1, num_steps=500, start="draw")
    assert p.skipped_steps > 0
    assert not p.trusted


# Item 2: "converged" at absurd ELBOs.
def test_an_absurd_elbo_is_never_converged() -> None:
    def steep(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -0.5e60 * (theta**2).sum(axis=1), -1e60 * theta

    p = _quiet_fit(steep, 1, num_steps=2000, start="draw")
    assert not (p.termination == "converged" and p.trusted), p.warnings


# Item 3: a non-finite posterior is never a success.
def test_a_non_finite_posterior_is_not_trusted() -> None:
    # measured: mean [-inf, nan]; the fit must say it diverged
    p = _quiet_fit(_normal, 2, lr=1e308, num_steps=100, start="draw")
    assert not np.isfinite(p.mean).all()
    assert p.termination == "diverged" and not p.trusted


# Item 6: numpyro.param sites are refused, not frozen.
def test_numpyro_param_sites_are_refused() -> None:
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist
    from smi.numpyro import fit as numpyro_fit

    def model() -> None:
        scale = numpyro.param("scale", 1.0)
        numpyro.sample("x", dist.Normal(0.0, scale))

    with pytest.raises(ValueError, match="numpyro.param site.*scale"):
        numpyro_fit(model, num_steps=10)


# Items 9 and 10: huge or negative counts are a ValueError naming the parameter, never an
# allocation abort or a PanicException.
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda p: p.sample(10**11), "n"),
        (lambda p: p.sample(2**63), "n"),
        (lambda p: p.sample(2**64), "n"),
        (lambda p: p.sample(-1), "n"),
        (lambda p: p.summary(10**11), "num_draws"),
        (lambda p: p.summary(-5), "num_draws"),
    ],
)
def test_absurd_draw_counts_are_refused(post: smi.Posterior, call, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=name):
        call(post)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"method": "nuts", "num_samples": 10**12}, "num_samples"),
        ({"method": "nuts", "num_chains": 10**9, "num_samples": 10**3}, "num_chains"),
        ({"num_stein_particles": 10**12}, "num_stein_particles"),
        ({"num_steps": -1}, "num_steps"),
        ({"num_steps": 10**15}, "num_steps"),
        ({"quality_draws": -3}, "quality_draws"),
        ({"method": "nuts", "num_warmup": -1}, "num_warmup"),
    ],
)
def test_absurd_fit_counts_are_refused(kwargs: dict, name: str) -> None:  # type: ignore[type-arg]
    calls = []

    def counted(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(1)
        return _normal(theta)

    with pytest.raises(ValueError, match=name):
        smi.fit(counted, 2, **kwargs)
    assert not calls, "refused before any work"


def test_counts_must_be_integers() -> None:
    with pytest.raises(TypeError, match="dim"):
        smi.fit(_normal, 2.7)
    with pytest.raises(TypeError, match="dim"):
        smi.fit(_normal, True)
    with pytest.raises(ValueError, match="dim"):
        smi.fit(_normal, 0)
    # NumPy's integers are integers
    p = smi.fit(_normal, np.int64(2), num_steps=np.int32(50), quality_draws=0, start="draw")
    assert p.dim == 2


def test_nuts_refuses_variational_settings() -> None:
    with pytest.raises(ValueError, match="num_steps"):
        smi.fit(_normal, 2, method="nuts", num_steps=100)
    with pytest.raises(ValueError, match="converge"):
        smi.fit(_normal, 2, method="nuts", converge=False)


def test_a_clean_fit_has_no_skipped_steps(post: smi.Posterior) -> None:
    assert post.skipped_steps == 0


# Item 5: a model file gives back the estimator exactly: label types and n_draws.
@pytest.mark.parametrize(
    "labels",
    [
        np.array([False, True]),
        np.array(["007", "7"]),
        np.array(["1", "1.0"]),
        np.array([3, 10]),
        np.array(["cat", "dog"], dtype=object),
    ],
    ids=["bool", "leading-zero", "1-and-1.0", "int", "object"],
)
def test_classifier_labels_survive_save_and_load(tmp_path, labels: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("sklearn")
    from smi import BNNClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = labels[(X[:, 0] > 0).astype(int)]
    est = BNNClassifier(hidden=(4,), max_steps=20, n_draws=7).fit(X, y)
    path = tmp_path / "c.smi"
    est.save(path)
    back = BNNClassifier.load(path)
    assert back.classes_.dtype == est.classes_.dtype
    np.testing.assert_array_equal(back.classes_, est.classes_)
    assert back.n_draws == 7
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert (back.predict(X) == y).mean() == (est.predict(X) == y).mean()


def test_n_jobs_minus_one_means_every_core() -> None:
    pytest.importorskip("sklearn")
    from smi import BNNRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    est = BNNRegressor(hidden=(4,), max_steps=10, n_jobs=-1).fit(X, X[:, 0])
    assert est.predict(X).shape == (40,)
    with pytest.raises(ValueError, match="n_jobs"):
        BNNRegressor(n_jobs=0).fit(X, X[:, 0])


def test_estimator_errors_name_the_estimators_parameters() -> None:
    pytest.importorskip("sklearn")
    from smi import BNNRegressor

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    with pytest.raises(ValueError, match="validation_fraction") as e:
        BNNRegressor(hidden=(4,), max_steps=10, validation_fraction=0.99).fit(X, X[:, 0])
    assert "--" not in str(e.value)
    with pytest.raises(ValueError, match="hidden") as e:
        BNNRegressor(hidden=(10**9, 10**9), max_steps=10).fit(X, X[:, 0])
    assert "--hidden" not in str(e.value)


def test_nuts_names_a_non_finite_gradient() -> None:
    def nan_grad(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -0.5 * (theta**2).sum(axis=1), np.full_like(theta, np.nan)

    with pytest.raises(smi.SmiError, match="gradient"):
        smi.fit(nan_grad, 2, method="nuts", num_warmup=10, num_samples=10)
