"""Check the models against their references with NumPyro's own NUTS (no smi needed).

    python validation/check_numpyro.py [--posteriors a,b] [--warmup 1000] [--samples 1000]
                                       [--chains 1] [--seed 0] [--json OUT]

A model whose NUTS draws miss the reference (max standardised mean error above ~0.15) is a
transcription bug, unless NUTS itself is known to fail on the posterior (``pathological`` in
the registry). Prints one Markdown table; ``--json`` also writes the rows as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
import numpyro
from numpyro.infer import MCMC, NUTS

from validation import reference
from validation.models import REGISTRY, by_stan_name, unconstrained_dim


def check(name: str, warmup: int, samples: int, chains: int, seed: int) -> dict[str, Any]:
    """Run NumPyro's NUTS on posterior ``name``; its row of the table."""
    ref = reference.load(name)
    entry = REGISTRY[name]
    kwargs = entry.kwargs(ref.data)
    start = time.perf_counter()
    mcmc = MCMC(
        NUTS(entry.model),
        num_warmup=warmup,
        num_samples=samples,
        num_chains=chains,
        chain_method="sequential",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",), **kwargs)
    draws = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    seconds = time.perf_counter() - start
    cmp = reference.compare(by_stan_name(draws), ref)
    return {
        "posterior": name,
        "kind": entry.kind,
        "d": unconstrained_dim(entry.model, kwargs),
        "max_std_mean_error": cmp.max_std_mean_error,
        "worst": cmp.worst,
        "sd_ratio_median": cmp.sd_ratio_median,
        "sd_ratio_min": cmp.sd_ratio_min,
        "divergences": int(np.sum(mcmc.get_extra_fields()["diverging"])),
        "seconds": seconds,
        "pathological": entry.pathological is not None,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posteriors", help="comma-separated names (default: all)")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON lines")
    args = parser.parse_args(argv)
    numpyro.enable_x64()
    names = args.posteriors.split(",") if args.posteriors else list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        parser.error(f"unknown posteriors: {unknown}")
    print("| posterior | kind | d | max std mean error (param) | sd ratio med / min | div | s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for name in names:
        row = check(name, args.warmup, args.samples, args.chains, args.seed)
        rows.append(row)
        flag = " (pathological)" if row["pathological"] else ""
        print(
            f"| {name}{flag} | {row['kind']} | {row['d']} | "
            f"{row['max_std_mean_error']:.3f} ({row['worst']}) | "
            f"{row['sd_ratio_median']:.2f} / {row['sd_ratio_min']:.2f} | "
            f"{row['divergences']} | {row['seconds']:.1f} |",
            flush=True,
        )
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    bad = [r["posterior"] for r in rows if r["max_std_mean_error"] >= 0.15]
    print(f"\n{len(rows) - len(bad)}/{len(rows)} within 0.15 sd; above: {', '.join(bad) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
