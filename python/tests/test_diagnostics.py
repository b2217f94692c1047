"""The fit's own diagnostics through ``smi.fit``: the termination's verdict, k-hat and the
warnings a user sees (docs/writing-a-model.md, "Is my fit good?")."""

from __future__ import annotations

import numpy as np
import pytest
import smi


def gaussian(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -0.5 * (theta**2).sum(axis=1), -theta


def test_a_density_that_is_never_finite_diverges_with_the_reason_and_a_warning() -> None:
    # Every step is skipped: the fit must not come back as an ordinary "max_steps".
    def nan(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(theta), np.nan), -theta

    with pytest.warns(UserWarning, match="diverged"):
        post = smi.fit(nan, 2, num_steps=300)
    assert post.termination == "diverged"
    assert "non-finite" in (post.termination_reason or "")
    assert not post.trusted
    assert "WARNING" in post.summary(num_draws=100)


def test_absurd_elbos_are_not_converged() -> None:
    # A target the Normal guides cannot reach from their draw (sd 1e-30): the ELBO stays near
    # -1e50. (From the default Laplace start the same fit ends without a warning.)
    def needle(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -0.5e60 * (theta**2).sum(axis=1), -1e60 * theta

    with pytest.warns(UserWarning):
        post = smi.fit(needle, 1, num_steps=3000, quality_draws=100, start="draw")
    assert post.termination == "diverged", post.termination_reason
    assert post.khat is not None and post.khat > 0.7


def test_an_exact_fit_reports_a_small_khat_the_elbo_and_no_warning() -> None:
    # OVI on N(0, I_3) is exact: k-hat of an exact approximation is small (0.13 measured); the
    # ELBO is log Z = 1.5 ln(2 pi) = 2.757 for this unnormalised density, its Monte Carlo se
    # over 500 estimates of S = 10 draws about 0.02.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = smi.fit(gaussian, 3, method="ovi", seed=1)
    assert post.termination == "converged"
    assert post.khat is not None and post.khat < post.khat_threshold == pytest.approx(
        0.697, abs=1e-3
    )
    assert post.trusted and post.warnings == []
    assert abs(post.elbo - 1.5 * np.log(2 * np.pi)) < 0.1 and 0 < post.elbo_mcse < 0.1
    assert "k-hat" in post.summary(num_draws=100)
    # Reweighted draws of an exact fit are draws of the target.
    x = post.sample_reweighted(4000, seed=2)
    assert x.shape == (4000, 3) and np.all(np.abs(x.var(axis=0) - 1) < 0.15)
    assert "reweighted" in post.summary(num_draws=500, reweighted=True)


def test_point_masses_have_no_khat() -> None:
    # MAP's Adam jitters around the mode (log p a few 1e-3 below its best): not a fall.
    post = smi.fit(gaussian, 2, method="map", num_steps=500, converge=False)
    assert post.termination == "max_steps", post.termination_reason
    assert post.khat is None and post.khat_threshold is None
    with pytest.raises(smi.SmiError, match="needs a density"):
        post.sample_reweighted(10)
    with pytest.raises(ValueError, match="at least 10"):
        smi.fit(gaussian, 2, method="ovi", quality_draws=5)
