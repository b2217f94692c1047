"""The validation set of ``validation/`` (posteriordb posteriors as NumPyro models): every
reference file loads, every model traces with its data and produces every reference parameter
by its Stan name, the harness's bookkeeping is right, and for three small posteriors NUTS
through ``smi.numpyro.fit`` matches the reference."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

numpyro = pytest.importorskip("numpyro")

from numpyro import handlers
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.util import log_density

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from validation import harness, reference
from validation.models import FAST, REGISTRY, by_stan_name

numpyro.enable_x64()


def test_every_posterior_has_a_reference_file_and_no_more() -> None:
    assert set(reference.available()) == set(REGISTRY)
    assert len(REGISTRY) >= 25
    assert set(FAST) <= set(REGISTRY)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_reference_loads_and_model_traces(name: str) -> None:
    ref = reference.load(name)
    assert ref.name == name
    assert re.fullmatch(r"[0-9a-f]{40}", ref.commit)
    assert ref.dim > 0 and ref.ndraws == 10_000
    assert np.all(ref.sd > 0)
    assert np.all(ref.q5 <= ref.q50) and np.all(ref.q50 <= ref.q95)
    if ref.draws is not None:
        assert ref.draws.shape[1] == ref.dim
        # The thinned draws are an unbiased subset: their means sit within ~5 of their own
        # Monte Carlo sds (sd / sqrt(1000) = 0.03 sd) of the full means.
        assert np.all(np.abs(ref.draws.mean(axis=0) - ref.mean) < 0.2 * ref.sd)

    # One eager trace at a random point of the support (as NUTS's initialisation draws it;
    # no jit, which would cost seconds per model): the log density there is finite, and the
    # latent and deterministic sites carry every reference parameter by its Stan name.
    entry = REGISTRY[name]
    kwargs = entry.kwargs(ref.data)
    at_random = handlers.substitute(handlers.seed(entry.model, 0), substitute_fn=init_to_uniform)
    trace = handlers.trace(at_random).get_trace(**kwargs)
    latent = {
        k: site["value"]
        for k, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"]
    }
    assert latent, f"{name}: no latent sites"
    logp, _ = log_density(entry.model, (), kwargs, latent)
    assert np.isfinite(float(logp)), f"{name}: log density {logp} at {latent}"
    sites = {
        k: np.asarray(site["value"])[None]
        for k, site in trace.items()
        if k in latent or site["type"] == "deterministic"
    }
    names = by_stan_name(sites)
    missing = [p for p in ref.parameters if p not in names]
    assert not missing, f"{name}: the model does not produce {missing}"


def _sites(ref: reference.Reference, draws: np.ndarray) -> dict[str, np.ndarray]:
    """Draws by Stan name back to NumPyro site arrays (``beta[1..k]`` -> ``beta``)."""
    out: dict[str, np.ndarray] = {}
    vectors: dict[str, list[np.ndarray]] = {}
    for j, p in enumerate(ref.parameters):
        if "[" in p:
            vectors.setdefault(p.split("[")[0], []).append(draws[:, j])
        else:
            out[p] = draws[:, j]
    return {**out, **{site: np.stack(cols, axis=1) for site, cols in vectors.items()}}


class _FakePosterior:
    """Stands in for ``smi.Posterior``: a termination and maybe a k-hat."""

    def __init__(self, termination: str, khat: float | None) -> None:
        self.termination = termination
        if khat is not None:
            self.khat = khat


class _FakeFit:
    """Stands in for ``smi.numpyro.fit``: posterior ``name``'s thinned reference draws,
    shifted by ``shift`` reference sds, reported as ``converged`` with k-hat ``khat``."""

    def __init__(self, name: str, shift: float, khat: float | None) -> None:
        self.name, self.shift, self.khat = name, shift, khat

    def __call__(self, model: Any, *, model_kwargs: dict, method: str, seed: int) -> Any:
        assert model is REGISTRY[self.name].model
        ref = reference.load(self.name)
        assert ref.draws is not None
        draws = ref.draws + self.shift * ref.sd
        fake = type("Fit", (), {})()
        fake.posterior = _FakePosterior("converged", self.khat)
        fake.get_samples = lambda: _sites(ref, draws)
        return fake


def test_harness_rows_and_summary_without_smi(capsys: pytest.CaptureFixture[str]) -> None:
    name = "mesquite-logmesquite_logvolume"
    good = harness.run_one(name, "smi", fit=_FakeFit(name, 0.0, None))
    assert good.max_std_mean_error < 0.1 and good.right and not good.silent_failure
    assert good.d == 3 and good.khat is None and good.termination == "converged"
    shifted = harness.run_one(name, "ovi", fit=_FakeFit(name, 0.5, 0.3))
    assert shifted.max_std_mean_error > 0.4 and not shifted.right and shifted.silent_failure
    flagged = harness.run_one(name, "ovi", fit=_FakeFit(name, 0.5, 0.9))
    assert not flagged.right and not flagged.silent_failure
    lines = harness.summary([good, shifted, flagged], ["smi", "ovi"])
    assert lines == [
        "smi: right 1/1 (100 %), silent failures 0",
        "ovi: right 0/2 (0 %), silent failures 1",
    ]
    harness.main(["--posteriors", name, "--methods", "smi"], fit=_FakeFit(name, 0.0, None))
    out = capsys.readouterr().out
    assert out.startswith("| posterior |") and f"| {name} | regression | 3 | smi |" in out


@pytest.mark.parametrize("name", FAST)
def test_fast_subset_nuts_matches_reference(name: str) -> None:
    # The reference means have Monte Carlo error ~ sd/100 (10 000 near-independent draws);
    # ours, with the default 4 x 1000 draws, ~ sd/50: 0.1 sd is 5 of our Monte Carlo sds.
    pytest.importorskip("smi._smi", reason="the smi extension is not built")
    import smi.numpyro as snp

    ref = reference.load(name)
    entry = REGISTRY[name]
    post = snp.fit(entry.model, model_kwargs=entry.kwargs(ref.data), method="nuts", seed=0)
    cmp = reference.compare(by_stan_name(post.get_samples()), ref)
    assert cmp.max_std_mean_error < 0.1, f"{name}: {cmp}"
