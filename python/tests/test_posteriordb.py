"""The four posteriordb posteriors as NumPyro models through ``smi.numpyro.fit`` with the
library's defaults, against posteriordb's reference draws (constrained space, Stan names)."""

from __future__ import annotations

import pytest

numpyro = pytest.importorskip("numpyro")

import smi.numpyro as snp
from posteriordb_models import POSTERIORS, data_dir, load, max_standardised_error

numpyro.enable_x64()


@pytest.fixture(scope="module", params=list(POSTERIORS))
def posterior(request: pytest.FixtureRequest) -> tuple[str, object, dict, dict]:
    name = request.param
    if not (data_dir() / "posteriordb" / POSTERIORS[name]).is_dir():
        pytest.fail(f"posteriordb data not found under {data_dir()}; set SMI_DATA_DIR")
    model, args, reference = load(name)
    return name, model, args, reference


def test_posteriordb_nuts_defaults(posterior: tuple[str, object, dict, dict]) -> None:
    # The reference means have Monte Carlo error ~ sd/100 (10 000 near-independent draws);
    # ours, with the default 4 x 1000 draws, ~ sd/50: 0.1 sd is 5 of our Monte Carlo sds.
    name, model, args, reference = posterior
    post = snp.fit(model, model_kwargs=args, method="nuts", seed=0)
    err = max_standardised_error(post.get_samples(), reference)
    assert err < 0.1, f"{name}: NUTS max standardised mean error {err:.3f}"


def test_posteriordb_smi_defaults(posterior: tuple[str, object, dict, dict]) -> None:
    # SMI with m = 5 Normal guides: the gate of the issue (0.15 sd) leaves room for the
    # mixture's own bias on the funnel-shaped eight schools.
    name, model, args, reference = posterior
    post = snp.fit(model, model_kwargs=args, method="smi", seed=0)
    err = max_standardised_error(post.get_samples(), reference)
    assert err < 0.15, f"{name}: SMI max standardised mean error {err:.3f}"
