"""Assemble ``validation/posteriors/<name>.json.gz`` from a posteriordb checkout.

    python validation/assemble.py --posteriordb DIR [--posteriors a,b] [--thin 10 | --no-draws]

``DIR`` is a checkout of github.com/stan-dev/posteriordb (the folder holding
``posterior_database/``). For each posterior of ``validation.models.REGISTRY`` (or those named)
it reads the posterior's definition, its data (``data/data/<data>.json.zip``) and its reference
draws (``reference_posteriors/draws/draws/<reference>.json.zip``: 10 chains x 1000 draws) and
writes one compressed file with the data, the summary of the draws and every ``--thin``-th
draw (``validation.reference.write``). The checkout's commit is recorded in each file (from
``git rev-parse HEAD``, or ``--commit`` where the folder is not a git work tree).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from validation import reference


def read_zipped_json(path: Path) -> Any:
    """The one JSON document inside the zip file ``path``."""
    with zipfile.ZipFile(path) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
        if len(names) != 1:
            raise ValueError(f"{path}: expected one file in the zip, found {names}")
        return json.loads(z.read(names[0]))


def checkout_commit(root: Path) -> str | None:
    """The commit checked out at ``root``, or None if ``root`` is not the top of a git work
    tree (a folder inside some other repository does not count)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    lines = out.stdout.split()
    if len(lines) != 2 or Path(lines[0]).resolve() != root.resolve():
        return None
    return lines[1]


def reference_draws(root: Path, name: str) -> tuple[list[str], np.ndarray]:
    """Parameter names and all reference draws (``[chains * draws, p]``, chain after chain)
    of reference posterior ``name``."""
    chains = read_zipped_json(
        root
        / "posterior_database"
        / "reference_posteriors"
        / "draws"
        / "draws"
        / f"{name}.json.zip"
    )
    parameters = list(chains[0])
    for chain in chains[1:]:
        if list(chain) != parameters:
            raise ValueError(f"{name}: chains disagree on the parameters")
    draws = np.concatenate(
        [np.column_stack([np.asarray(c[p], dtype=np.float64) for p in parameters]) for c in chains]
    )
    return parameters, draws


def assemble(
    root: Path, name: str, commit: str, out_dir: Path, thin: int | None
) -> tuple[Path, int]:
    """Write posterior ``name``'s reference file; returns its path and parameter count."""
    db = root / "posterior_database"
    info = json.loads((db / "posteriors" / f"{name}.json").read_text())
    ref_name = info.get("reference_posterior_name")
    if not ref_name:
        raise ValueError(f"{name}: posteriordb has no reference posterior for it")
    data = read_zipped_json(db / "data" / "data" / f"{info['data_name']}.json.zip")
    parameters, draws = reference_draws(root, ref_name)
    if thin is not None and draws.shape[0] % thin:
        raise ValueError(f"{name}: {draws.shape[0]} draws do not thin evenly by {thin}")
    out = reference.path(name, out_dir)
    reference.write(
        out,
        name=name,
        commit=commit,
        reference_posterior_name=ref_name,
        data=data,
        parameters=parameters,
        draws=draws,
        thin=thin,
    )
    return out, len(parameters)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posteriordb", type=Path, required=True, help="posteriordb checkout")
    parser.add_argument("--posteriors", help="comma-separated names (default: the registry's)")
    parser.add_argument("--out", type=Path, default=reference.POSTERIORS_DIR)
    parser.add_argument("--commit", help="posteriordb commit, where DIR is not a git work tree")
    parser.add_argument("--thin", type=int, default=10, help="keep every THIN-th draw")
    parser.add_argument("--no-draws", action="store_true", help="store the summary only")
    args = parser.parse_args(argv)

    root: Path = args.posteriordb
    if not (root / "posterior_database" / "posteriors").is_dir():
        parser.error(f"{root} is not a posteriordb checkout (no posterior_database/posteriors)")
    commit = args.commit or checkout_commit(root)
    if commit is None:
        parser.error(f"{root} is not a git work tree: give its commit with --commit")
    if args.posteriors:
        names = args.posteriors.split(",")
    else:
        from validation.models import REGISTRY

        names = list(REGISTRY)
    thin = None if args.no_draws else args.thin
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for name in names:
        out, p = assemble(root, name, commit, args.out, thin)
        size = out.stat().st_size
        total += size
        print(f"{name:48s} {p:3d} parameters {size / 1024:8.1f} KiB")
    print(f"{len(names)} posteriors, {total / 1024:.1f} KiB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
