"""NUTS through ``smi.numpyro.fit`` against NumPyro's own NUTS on the four posteriordb models.

Each timing is one fresh Python process (wall time from the model's import to the draws in
hand, JAX compilation included), with the same settings on both sides: 4 chains x (1000
warm-up + 1000 draws), target acceptance 0.8, diagonal mass matrix. NumPyro runs its chains
``sequential`` (what ``MCMC(..., num_chains=4)`` does on one CPU device) and ``vectorized``.

    python python/bench/nuts_numpyro.py [--repeats 3] [--models kidiq,arK]

prints one Markdown row per model: the median wall seconds of each runner over the repeats.
Needs ``SMI_DATA_DIR`` (or ``../shared/data``), numpyro and the built ``smi`` extension.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "python" / "tests"
RUNNERS = ("smi", "numpyro-sequential", "numpyro-vectorized")
SETTINGS = {"num_warmup": 1000, "num_samples": 1000, "num_chains": 4}


def one_run(runner: str, name: str) -> None:
    """Fits ``name`` with ``runner`` in this process; prints wall seconds and the max
    standardised error of the posterior means against the reference draws as JSON."""
    start = time.perf_counter()
    sys.path.insert(0, str(TESTS))
    import jax
    import numpyro
    from posteriordb_models import load, max_standardised_error

    jax.config.update("jax_enable_x64", True)
    model, args, reference = load(name)
    if runner == "smi":
        import smi.numpyro

        samples = smi.numpyro.fit(
            model, model_kwargs=args, method="nuts", seed=0, **SETTINGS
        ).get_samples()
    else:
        from numpyro.infer import MCMC, NUTS

        mcmc = MCMC(
            NUTS(model),
            num_warmup=SETTINGS["num_warmup"],
            num_samples=SETTINGS["num_samples"],
            num_chains=SETTINGS["num_chains"],
            chain_method=runner.split("-")[1],
            progress_bar=False,
        )
        mcmc.run(jax.random.PRNGKey(0), **args)
        samples = mcmc.get_samples()
    samples = {k: jax.device_get(v) for k, v in samples.items()}
    wall = time.perf_counter() - start
    error = max_standardised_error(samples, reference)
    print(json.dumps({"wall": wall, "error": float(error), "numpyro": numpyro.__version__}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="eight_schools,kidiq,sblrc,arK")
    parser.add_argument("--runners", default=",".join(RUNNERS))
    parser.add_argument("--one", nargs=2, metavar=("RUNNER", "MODEL"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.one:
        one_run(*opts.one)
        return
    runners = opts.runners.split(",")
    print("| posterior | " + " | ".join(f"{r} (s)" for r in runners) + " | max error (sd) |")
    print("|---|" + "---:|" * len(runners) + "---|")
    for name in opts.models.split(","):
        cells, errors = [], []
        for runner in runners:
            walls = []
            for _ in range(opts.repeats):
                out = subprocess.run(
                    [sys.executable, __file__, "--one", runner, name],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                result = json.loads(out.strip().splitlines()[-1])
                walls.append(result["wall"])
                errors.append(f"{runner} {result['error']:.3f}")
            cells.append(f"{statistics.median(walls):.1f}")
        print(f"| {name} | " + " | ".join(cells) + f" | {', '.join(errors[:: opts.repeats])} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
