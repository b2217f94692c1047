"""Run the validation set through ``smi.numpyro.fit`` and print one Markdown table.

    python validation/harness.py [--subset all|fast | --posteriors a,b]
                                 [--methods smi,ovi,svgd,nuts] [--seed 0] [--json OUT]

Every posterior is fitted by every method with the library's defaults
(``smi.numpyro.fit(model, model_kwargs=..., method=M, seed=0)``); its draws
(``get_samples()``: the NUTS draws, or 4000 draws of a variational fit) are compared with the
posteriordb reference on the constrained space, by Stan name. Per row: the max standardised
mean error ``max |mean - ref mean| / ref sd``, the sd ratio ours / reference (median and min
over parameters), k-hat (where the method reports one), the termination and the seconds.

A fit is **right** when its max standardised mean error is below 0.15 and its median sd ratio
at least 0.7. A **silent failure** is a fit that is not right although nothing warns: its
termination is ``"converged"`` and its k-hat is at most 0.7 or missing. The last lines give,
per method, the share right and the count of silent failures. ``--json`` also writes the rows
as JSON lines. smi is imported only when a fit runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from validation import reference

#: The methods run by default.
METHODS = ("smi", "ovi", "svgd", "nuts")

#: A fit is right below this max standardised mean error...
RIGHT_MEAN_ERROR = 0.15
#: ... and at or above this median sd ratio.
RIGHT_SD_RATIO = 0.7
#: k-hat above this flags the fit (smi's own ``khat_threshold``).
KHAT_THRESHOLD = 0.7

#: ``fit(model, model_kwargs=..., method=..., seed=...)`` -> an object with ``get_samples()``
#: and ``posterior`` (``smi.numpyro.fit``'s signature).
FitFn = Callable[..., Any]


@dataclass
class Row:
    """One (posterior, method) result; the metrics are NaN where the fit failed."""

    posterior: str
    kind: str
    d: int
    method: str
    max_std_mean_error: float
    worst: str
    sd_ratio_median: float
    sd_ratio_min: float
    khat: float | None
    termination: str
    seconds: float
    error: str | None = None
    #: ESS / draws of k-hat's smoothed weights (None where there is no k-hat).
    relative_ess: float | None = None

    @property
    def right(self) -> bool:
        """Mean within 0.15 reference sd everywhere and median sd ratio at least 0.7."""
        return self.max_std_mean_error < RIGHT_MEAN_ERROR and self.sd_ratio_median >= RIGHT_SD_RATIO

    @property
    def silent_failure(self) -> bool:
        """Not right, yet ``converged`` with k-hat at most 0.7 or missing."""
        quiet_khat = self.khat is None or self.khat <= KHAT_THRESHOLD
        return not self.right and self.termination == "converged" and quiet_khat


def smi_fit(model: Any, **kwargs: Any) -> Any:
    """``smi.numpyro.fit``, imported on first use (the harness loads without smi)."""
    import smi.numpyro as snp

    return snp.fit(model, **kwargs)


def _khat(post: Any) -> float | None:
    """k-hat of the fit where the engine reports one (a NaN counts as missing)."""
    value = getattr(post.posterior, "khat", None)
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


#: d per posterior, computed once (it needs a jitted NumPyro initialisation).
_DIMS: dict[str, int] = {}


def run_one(
    name: str,
    method: str,
    seed: int = 0,
    fit: FitFn = smi_fit,
    options: dict[str, Any] | None = None,
) -> Row:
    """Fit posterior ``name`` by ``method`` with the library defaults, changed by ``options``
    (keyword arguments of ``smi.fit``, e.g. ``guide``; none for NUTS); its row. The row's
    method names the options (``smi guide=fullrank``)."""
    extra = dict(options or {}) if method != "nuts" else {}
    label = " ".join([method, *(f"{k}={v}" for k, v in extra.items())])
    from validation.models import REGISTRY, by_stan_name, unconstrained_dim

    ref = reference.load(name)
    entry = REGISTRY[name]
    kwargs = entry.kwargs(ref.data)
    if name not in _DIMS:
        _DIMS[name] = unconstrained_dim(entry.model, kwargs)
    d = _DIMS[name]
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # An untrusted fit warns; the row shows k-hat and the termination instead.
            warnings.simplefilter("ignore", UserWarning)
            post = fit(entry.model, model_kwargs=kwargs, method=method, seed=seed, **extra)
            samples = post.get_samples()
        seconds = time.perf_counter() - start
        cmp = reference.compare(by_stan_name(samples), ref)
    except Exception as err:  # noqa: BLE001 - one failed fit must not end the run
        nan = float("nan")
        return Row(
            name,
            entry.kind,
            d,
            label,
            nan,
            "",
            nan,
            nan,
            None,
            "error",
            time.perf_counter() - start,
            f"{type(err).__name__}: {err}",
        )
    return Row(
        posterior=name,
        kind=entry.kind,
        d=d,
        method=label,
        max_std_mean_error=cmp.max_std_mean_error,
        worst=cmp.worst,
        sd_ratio_median=cmp.sd_ratio_median,
        sd_ratio_min=cmp.sd_ratio_min,
        khat=_khat(post),
        termination=str(post.posterior.termination),
        seconds=seconds,
        relative_ess=getattr(post.posterior, "psis_relative_ess", None),
    )


HEADER = (
    "| posterior | kind | d | method | max std mean error | sd ratio med / min | k-hat "
    "| termination | s |\n|---|---|---:|---|---:|---:|---:|---|---:|"
)


def format_row(row: Row) -> str:
    """One Markdown table line; a failed fit shows its error in the termination column."""
    khat = "–" if row.khat is None else f"{row.khat:.2f}"
    termination = row.termination if row.error is None else f"error: {row.error[:60]}"
    mark = "" if row.right else " ✗"
    if row.silent_failure:
        mark = " ✗ silent"
    return (
        f"| {row.posterior} | {row.kind} | {row.d} | {row.method} | "
        f"{row.max_std_mean_error:.3f}{mark} | "
        f"{row.sd_ratio_median:.2f} / {row.sd_ratio_min:.2f} | {khat} | {termination} | "
        f"{row.seconds:.1f} |"
    )


def summary(rows: Sequence[Row], methods: Sequence[str]) -> list[str]:
    """Per method: the share right and the count of silent failures."""
    lines = []
    # rows name their options after the method (``smi guide=fullrank``)
    labels = list(dict.fromkeys(r.method for r in rows))
    ordered = [x for m in methods for x in labels if x.split(" ")[0] == m]
    for method in ordered:
        mine = [r for r in rows if r.method == method]
        if not mine:
            continue
        right = sum(r.right for r in mine)
        silent = sum(r.silent_failure for r in mine)
        lines.append(
            f"{method}: right {right}/{len(mine)} ({100 * right / len(mine):.0f} %), "
            f"silent failures {silent}"
        )
    return lines


def select(subset: str, posteriors: str | None) -> list[str]:
    """The posteriors to run: those named, else the subset (``all`` or ``fast``)."""
    from validation.models import FAST, REGISTRY

    if posteriors:
        names = posteriors.split(",")
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise ValueError(f"unknown posteriors: {unknown}; known: {sorted(REGISTRY)}")
        return names
    if subset == "fast":
        return list(FAST)
    if subset == "all":
        return list(REGISTRY)
    raise ValueError(f"unknown subset {subset!r}: all or fast")


def main(argv: list[str] | None = None, fit: FitFn = smi_fit) -> int:
    """Command-line entry point (``fit`` replaces ``smi.numpyro.fit`` in tests)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subset", default="all", choices=("all", "fast"))
    parser.add_argument("--posteriors", help="comma-separated names (overrides --subset)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON lines")
    parser.add_argument(
        "--guide", help="guide of SMI and OVI: normal (default), lowrank:R or fullrank"
    )
    parser.add_argument(
        "--repulsion-temperature", type=float, help="alpha of SMI and SVGD (default: preset's)"
    )
    parser.add_argument(
        "--start", help="start of SMI and OVI: draw or laplace (default: library's)"
    )
    args = parser.parse_args(argv)
    import numpyro

    numpyro.enable_x64()
    try:
        names = select(args.subset, args.posteriors)
    except ValueError as err:
        parser.error(str(err))
    methods = args.methods.split(",")
    options: dict[str, Any] = {}
    if args.guide:
        options["guide"] = args.guide
    if args.repulsion_temperature is not None:
        options["repulsion_temperature"] = args.repulsion_temperature
    if args.start:
        options["start"] = args.start
    if args.json:
        args.json.write_text("")
    print(HEADER, flush=True)
    rows = []
    for name in names:
        for method in methods:
            row = run_one(name, method, args.seed, fit, options)
            rows.append(row)
            print(format_row(row), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    record = {**asdict(row), "right": row.right, "silent": row.silent_failure}
                    f.write(json.dumps(record, default=_json_float) + "\n")
    print()
    for line in summary(rows, methods):
        print(line)
    return 0


def _json_float(value: Any) -> Any:
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
