"""The committed reference files ``validation/posteriors/<name>.json.gz``: writing, reading and
comparing a fit's draws against them.

One file per posterior: its name, the posteriordb commit it came from, the data exactly as
posteriordb has it, and the summary of posteriordb's reference draws (10 chains x 1000 draws of
Stan's NUTS, constrained space, Stan names such as ``beta[1]``): per parameter the mean, the
sd (ddof = 1) and the 5/50/95 % quantiles over all draws, plus optionally a thinned subset of
the draws (rounded to ``DRAW_DIGITS`` significant digits). Needs only NumPy.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Version of the file layout; bump when a field changes meaning.
FORMAT = 1

#: Significant digits kept in the thinned draws (far below their Monte Carlo error).
DRAW_DIGITS = 6

#: Where the reference files live.
POSTERIORS_DIR = Path(__file__).resolve().parent / "posteriors"

#: The summary statistics stored per parameter, in file order.
STATISTICS = ("mean", "sd", "q5", "q50", "q95")


@dataclass(frozen=True)
class Reference:
    """One posterior's committed reference.

    Attributes:
        name: the posteriordb posterior name (``"arK-arK"``).
        commit: the posteriordb commit the file was assembled from.
        reference_posterior_name: the posteriordb reference posterior the summary comes from
            (differs from ``name`` only where posteriordb shares one, as the centred eight
            schools does with the non-centred one).
        data: the posterior's data, as posteriordb's JSON has it.
        parameters: Stan names of the constrained parameters, in posteriordb's order.
        mean, sd, q5, q50, q95: per-parameter statistics (shape ``[len(parameters)]``).
        ndraws: how many reference draws the statistics were computed from.
        draws: thinned reference draws, ``[n, len(parameters)]``, or None if not stored.
    """

    name: str
    commit: str
    reference_posterior_name: str
    data: dict[str, Any]
    parameters: list[str]
    mean: np.ndarray
    sd: np.ndarray
    q5: np.ndarray
    q50: np.ndarray
    q95: np.ndarray
    ndraws: int
    draws: np.ndarray | None

    @property
    def dim(self) -> int:
        """The number of reference parameters (not always the model's unconstrained d)."""
        return len(self.parameters)


def path(name: str, directory: Path = POSTERIORS_DIR) -> Path:
    """The reference file of posterior ``name``."""
    return directory / f"{name}.json.gz"


def available(directory: Path = POSTERIORS_DIR) -> list[str]:
    """Names of the posteriors that have a reference file, sorted."""
    return sorted(p.name[: -len(".json.gz")] for p in directory.glob("*.json.gz"))


def summarise(draws: np.ndarray) -> dict[str, np.ndarray]:
    """Per-column statistics of ``draws`` (``[n, p]``): mean, sd (ddof = 1), 5/50/95 %."""
    q5, q50, q95 = np.quantile(draws, [0.05, 0.5, 0.95], axis=0)
    return {
        "mean": draws.mean(axis=0),
        "sd": draws.std(axis=0, ddof=1),
        "q5": q5,
        "q50": q50,
        "q95": q95,
    }


def _rounded(values: np.ndarray, digits: int) -> list[float]:
    return [float(f"{v:.{digits}g}") for v in values]


def write(
    out: Path,
    *,
    name: str,
    commit: str,
    reference_posterior_name: str,
    data: dict[str, Any],
    parameters: list[str],
    draws: np.ndarray,
    thin: int | None,
) -> None:
    """Write one reference file from all reference draws (``[n, len(parameters)]``).

    ``thin``: keep every ``thin``-th draw in the file (None: keep no draws, only the summary).
    """
    stats = summarise(draws)
    reference: dict[str, Any] = {
        "ndraws": int(draws.shape[0]),
        "parameters": parameters,
        **{key: [float(v) for v in stats[key]] for key in STATISTICS},
    }
    if thin is not None:
        kept = draws[::thin]
        reference["thin"] = thin
        reference["draws"] = [_rounded(kept[:, j], DRAW_DIGITS) for j in range(len(parameters))]
    record = {
        "format": FORMAT,
        "name": name,
        "posteriordb_commit": commit,
        "reference_posterior_name": reference_posterior_name,
        "data": data,
        "reference": reference,
    }
    text = json.dumps(record, separators=(",", ":"))
    # mtime=0 keeps the bytes reproducible: regenerating an unchanged file changes nothing.
    with (
        open(out, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz,
    ):
        gz.write(text.encode())


def load(name: str, directory: Path = POSTERIORS_DIR) -> Reference:
    """Read the reference file of posterior ``name``."""
    with gzip.open(path(name, directory), "rt") as f:
        record = json.load(f)
    if record.get("format") != FORMAT:
        raise ValueError(f"{name}: file format {record.get('format')}, expected {FORMAT}")
    ref = record["reference"]
    draws = ref.get("draws")
    return Reference(
        name=record["name"],
        commit=record["posteriordb_commit"],
        reference_posterior_name=record["reference_posterior_name"],
        data=record["data"],
        parameters=list(ref["parameters"]),
        ndraws=int(ref["ndraws"]),
        draws=None if draws is None else np.asarray(draws, dtype=np.float64).T,
        **{key: np.asarray(ref[key], dtype=np.float64) for key in STATISTICS},
    )


@dataclass(frozen=True)
class Comparison:
    """How a fit's draws compare with the reference, parameter by parameter.

    Attributes:
        max_std_mean_error: max over parameters of ``|mean - ref mean| / ref sd``.
        worst: the parameter where that maximum is reached.
        sd_ratio_median, sd_ratio_min: median and min over parameters of ``sd / ref sd``.
    """

    max_std_mean_error: float
    worst: str
    sd_ratio_median: float
    sd_ratio_min: float


def compare(samples: dict[str, np.ndarray], ref: Reference) -> Comparison:
    """Compare draws by Stan name (``[n]`` each) with ``ref``.

    Raises:
        KeyError: a reference parameter has no draws in ``samples`` (the message lists them).
    """
    missing = [p for p in ref.parameters if p not in samples]
    if missing:
        raise KeyError(f"{ref.name}: parameters missing from the fit: {missing}")
    ours = np.stack([np.asarray(samples[p], dtype=np.float64) for p in ref.parameters], axis=1)
    errors = np.abs(ours.mean(axis=0) - ref.mean) / ref.sd
    ratios = ours.std(axis=0, ddof=1) / ref.sd
    worst = int(np.argmax(errors))
    return Comparison(
        max_std_mean_error=float(errors[worst]),
        worst=ref.parameters[worst],
        sd_ratio_median=float(np.median(ratios)),
        sd_ratio_min=float(np.min(ratios)),
    )
