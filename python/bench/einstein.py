"""``python/tests/einstein_style.py`` (a NumPyro einstein script: a BNN, SteinVI with an
AutoNormal guide, 5 particles x 10 ELBO draws, subsample 64) on NumPyro's engine and, with only
its import line changed, on smi's.

    python python/bench/einstein.py [--steps 2000] [--short 200] [--repeats 3]

prints one Markdown row per engine: the median over fresh processes of the wall seconds of
``SteinVI.run`` at ``--steps`` and at ``--short`` steps (JAX compilation included in both), the
time per step beyond compilation ((long - short) / (steps - short)), and the test RMSE of the
long run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "python" / "tests"


def one_run(engine: str, steps: int) -> None:
    sys.path.insert(0, str(TESTS))
    from test_einstein import load_script

    out = load_script(engine).main(num_steps=steps)
    print(json.dumps({"seconds": out["seconds"], "rmse": out["rmse"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--short", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.one:
        one_run(opts.one, opts.steps)
        return
    print(
        f"| engine | run, {opts.steps} steps (s) | run, {opts.short} steps (s) "
        "| ms per step beyond compilation | test RMSE |"
    )
    print("|---|---:|---:|---:|---:|")
    for engine in ("numpyro", "smi"):
        runs: dict[int, list[dict[str, float]]] = {opts.steps: [], opts.short: []}
        for _ in range(opts.repeats):
            for steps, rows in runs.items():
                out = subprocess.run(
                    [sys.executable, __file__, "--one", engine, "--steps", str(steps)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                rows.append(json.loads(out.strip().splitlines()[-1]))
        long = statistics.median(r["seconds"] for r in runs[opts.steps])
        short = statistics.median(r["seconds"] for r in runs[opts.short])
        rmse = statistics.median(r["rmse"] for r in runs[opts.steps])
        per_step = 1000 * (long - short) / (opts.steps - opts.short)
        print(f"| {engine} | {long:.1f} | {short:.1f} | {per_step:.2f} | {rmse:.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
