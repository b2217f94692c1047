"""Property-based fuzzing of the Python API's settings and counts (Hypothesis).

Every call either returns or raises ``ValueError``, ``TypeError`` or ``smi.SmiError``: never
another exception, a ``PanicException``, or an abort that kills the interpreter. CI runs a few
examples per property; ``SMI_FUZZ_EXAMPLES=5000 python -m pytest python/tests/test_fuzz_api.py``
runs them longer (docs/fuzzing.md).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
import smi

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("SMI_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
CLEAN = (ValueError, TypeError, smi.SmiError)

# A count as a user might pass one: small valid values (so that a call that runs is quick),
# zero, negatives, values far beyond any memory or 64 bits, floats, bools, NumPy integers,
# strings and None.
counts = st.one_of(
    st.integers(min_value=1, max_value=20),
    st.integers(min_value=-(2**70), max_value=0),
    st.integers(min_value=10**12, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.integers(min_value=1, max_value=20).map(np.int64),
    st.text(max_size=3),
    st.none(),
)


def _normal(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return -0.5 * (theta**2).sum(axis=1), -theta


@pytest.fixture(scope="module")
def post() -> smi.Posterior:
    return smi.fit(_normal, 2, quality_draws=0)


def _cleanly(f: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            f()
        except CLEAN:
            pass


@FUZZ
@given(n=counts, seed=st.integers(min_value=0, max_value=2**64 - 1))
def test_posterior_counts(post: smi.Posterior, n: Any, seed: int) -> None:
    _cleanly(lambda: post.sample(n, seed=seed))
    _cleanly(lambda: post.summary(n))
    _cleanly(lambda: post.sample_reweighted(n))


@FUZZ
@given(
    method=st.sampled_from(list(smi.METHODS) + ["bogus"]),
    dim=counts,
    setting=st.sampled_from(
        [
            "num_stein_particles",
            "num_elbo_particles",
            "quality_draws",
            "num_warmup",
            "num_samples",
            "num_chains",
        ]
    ),
    value=counts,
    lr=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_fit_settings(method: str, dim: Any, setting: str, value: Any, lr: Any) -> None:
    kwargs: dict[str, Any] = {setting: value}
    if method == "nuts":
        # a short run, whatever else is asked
        kwargs.setdefault("num_warmup", 5)
        kwargs.setdefault("num_samples", 5)
    else:
        kwargs["num_steps"] = 5
        kwargs["quality_draws"] = kwargs.get("quality_draws", 0)
        if lr is not None:
            kwargs["lr"] = lr
    _cleanly(lambda: smi.fit(_normal, dim, method=method, **kwargs))
