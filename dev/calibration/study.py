"""Calibration study of `smi fit` against scikit-learn baselines (issue 16, item 2).

For each data set: a fixed train/test split written as CSV files, `smi fit` with its defaults
(plus any `--flags`), `smi predict --metrics` on the test rows, and the baselines a user would
otherwise pick (BayesianRidge and a Gaussian process for regression, logistic regression for
classification) on the same split. Prints a Markdown table and appends one JSON line per fit
to `--log`.

Data sets: scikit-learn's bundled diabetes (regression), wine (3 classes), breast cancer
(2 classes) and digits (10 classes), 80/20 splits with `random_state=0` (stratified for the
classifiers); the UCI sets concrete, energy, yacht and Boston housing from
`../shared/data/uci` (or `$SMI_DATA_DIR/uci`) on their standard split 0 (90/10).

Metrics (test rows):
- NLL: mean negative log predictive density in target units (regression) or the mean
  negative log probability of the true class (classification).
- cov90: fraction of test targets inside the central 90 % predictive interval.
- ECE: top-label expected calibration error with 10 equal-width confidence bins,
  sum over bins of (rows in bin / rows) * |accuracy in bin - mean confidence in bin|.

Run with the project's virtual environment (numpy, scikit-learn):

    target/py-venv/bin/python dev/calibration/study.py --datasets diabetes,wine,concrete
    target/py-venv/bin/python dev/calibration/study.py --datasets concrete --flags="--hidden 20"
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from sklearn import datasets as skd
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import BayesianRidge, LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

REPO = Path(__file__).resolve().parents[2]
SMI = REPO / "target" / "release" / "smi"
WORK = REPO / "target" / "calibration"
REGRESSION_SETS = ("diabetes", "concrete", "energy", "yacht", "boston")
CLASSIFICATION_SETS = ("wine", "breast_cancer", "digits", "iris")
UCI_FOLDERS = {
    "concrete": "concrete",
    "energy": "energy",
    "yacht": "yacht",
    "boston": "bostonHousing",
}
SEED = 0
ECE_BINS = 10

Array = NDArray[np.float64]


@dataclass
class Split:
    """A train/test split; `y` holds floats (regression) or class indices (classification)."""

    name: str
    classification: bool
    x_train: Array
    y_train: Array
    x_test: Array
    y_test: Array


@dataclass
class Result:
    """One row of the table."""

    dataset: str
    model: str
    n_train: int
    n_test: int
    d: int
    nll: float
    seconds: float = math.nan
    rmse: float = math.nan
    accuracy: float = math.nan
    cov50: float = math.nan
    cov90: float = math.nan
    cov95: float = math.nan
    ece: float = math.nan
    mean_conf: float = math.nan
    flags: str = ""
    load: str = ""
    extra: dict[str, float | int | str] = field(default_factory=dict)


def data_dir() -> Path:
    env = os.environ.get("SMI_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def read_ints(path: Path) -> list[int]:
    return [int(t) for t in path.read_text().split()]


def load_uci(name: str) -> Split:
    folder = data_dir() / "uci" / UCI_FOLDERS[name]
    rows = [
        [float(t) for t in line.split()]
        for line in (folder / "data.txt").read_text().splitlines()
        if line.strip()
    ]
    data = np.array(rows)
    feats = read_ints(folder / "index_features.txt")
    target = read_ints(folder / "index_target.txt")[0]
    tr = read_ints(folder / "index_train_0.txt")
    te = read_ints(folder / "index_test_0.txt")
    x, y = data[:, feats], data[:, target]
    return Split(name, False, x[tr], y[tr], x[te], y[te])


def load(name: str) -> Split:
    if name in UCI_FOLDERS:
        return load_uci(name)
    loaders = {
        "diabetes": skd.load_diabetes,
        "wine": skd.load_wine,
        "breast_cancer": skd.load_breast_cancer,
        "digits": skd.load_digits,
        "iris": skd.load_iris,
    }
    bunch = loaders[name]()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.float64)
    classification = name in CLASSIFICATION_SETS
    xtr, xte, ytr, yte = train_test_split(
        x, y, test_size=0.2, random_state=SEED, stratify=y if classification else None
    )
    return Split(name, classification, xtr, ytr, xte, yte)


def write_csv(path: Path, x: Array, y: Array, classification: bool) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"x{j}" for j in range(x.shape[1])] + ["y"])
        for xi, yi in zip(x, y):
            label = str(int(yi)) if classification else repr(float(yi))
            w.writerow([repr(float(v)) for v in xi] + [label])


def ece_of(prob: Array, y: NDArray[np.int64]) -> tuple[float, float]:
    """Top-label ECE (10 equal-width bins) and the mean top-class confidence."""
    conf = prob.max(axis=1)
    correct = (prob.argmax(axis=1) == y).astype(np.float64)
    bins = np.minimum((conf * ECE_BINS).astype(int), ECE_BINS - 1)
    ece = 0.0
    for b in range(ECE_BINS):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - conf[mask].mean())
    return float(ece), float(conf.mean())


def gaussian_metrics(mean: Array, std: Array, y: Array) -> dict[str, float]:
    from scipy.stats import norm

    nll = float(np.mean(0.5 * np.log(2 * np.pi * std**2) + 0.5 * ((y - mean) / std) ** 2))
    out = {"nll": nll, "rmse": float(np.sqrt(np.mean((y - mean) ** 2)))}
    for level in (50, 90, 95):
        z = norm.ppf(0.5 + level / 200)
        out[f"cov{level}"] = float(np.mean(np.abs(y - mean) <= z * std))
    return out


def baselines(s: Split) -> list[Result]:
    sx = StandardScaler().fit(s.x_train)
    xtr, xte = sx.transform(s.x_train), sx.transform(s.x_test)
    n, d = xtr.shape
    out: list[Result] = []
    if not s.classification:
        sy = StandardScaler().fit(s.y_train[:, None])
        ytr = sy.transform(s.y_train[:, None]).ravel()
        scale = float(sy.scale_[0])

        def to_units(m: Array, sd: Array) -> tuple[Array, Array]:
            return sy.inverse_transform(m[:, None]).ravel(), sd * scale

        kernel = ConstantKernel(1.0) * RBF(length_scale=np.ones(d), length_scale_bounds=(1e-2, 1e3))
        kernel = kernel + WhiteKernel(0.1, noise_level_bounds=(1e-6, 1e1))
        for label, make in (
            ("BayesianRidge", BayesianRidge),
            (
                "GP (ARD RBF + white)",
                lambda: GaussianProcessRegressor(kernel, n_restarts_optimizer=0, random_state=SEED),
            ),
        ):
            t0 = time.time()
            m, sd = make().fit(xtr, ytr).predict(xte, return_std=True)
            mu, su = to_units(np.asarray(m), np.asarray(sd))
            out.append(
                Result(
                    s.name,
                    label,
                    n,
                    len(s.y_test),
                    d,
                    seconds=time.time() - t0,
                    **gaussian_metrics(mu, su, s.y_test),
                )
            )
        return out
    ytr_i = s.y_train.astype(int)
    yte_i = s.y_test.astype(int)
    for label, make in (
        ("LogReg (C=1)", lambda: LogisticRegression(max_iter=5000)),
        (
            "LogReg (CV C)",
            lambda: LogisticRegressionCV(Cs=10, max_iter=5000, scoring="neg_log_loss"),
        ),
    ):
        t0 = time.time()
        lr = make().fit(xtr, ytr_i)
        p = lr.predict_proba(xte)
        ece, conf = ece_of(p, yte_i)
        nll = float(-np.mean(np.log(np.clip(p[np.arange(len(yte_i)), yte_i], 1e-300, None))))
        out.append(
            Result(
                s.name,
                label,
                n,
                len(yte_i),
                d,
                nll=nll,
                seconds=time.time() - t0,
                accuracy=float(np.mean(p.argmax(1) == yte_i)),
                ece=ece,
                mean_conf=conf,
            )
        )
    return out


def cached_baselines(s: Split) -> list[Result]:
    """The baselines of `s`, computed once and kept under target/calibration/baselines."""
    path = WORK / "baselines" / f"{s.name}.json"
    if path.exists():
        return [Result(**r) for r in json.loads(path.read_text())]
    out = baselines(s)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(r) for r in out]))
    return out


def load_avg() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def smi_run(s: Split, flags: list[str], tag: str, reuse: bool = False) -> Result:
    folder = WORK / s.name
    folder.mkdir(parents=True, exist_ok=True)
    train, test = folder / "train.csv", folder / "test.csv"
    write_csv(train, s.x_train, s.y_train, s.classification)
    write_csv(test, s.x_test, s.y_test, s.classification)
    model = folder / f"{tag}.smi"
    task = "classification" if s.classification else "regression"
    cmd = [
        str(SMI),
        "fit",
        "--csv",
        str(train),
        "--target",
        "y",
        "--task",
        task,
        "--save",
        str(model),
        *flags,
    ]
    load_before = load_avg()
    t0 = time.time()
    if reuse and model.exists():
        stderr = "(reused)"
    else:
        env = {**os.environ, "SMI_NO_PROGRESS": "1"}
        fit = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
        if fit.returncode != 0:
            sys.exit(f"smi fit failed ({' '.join(cmd)}):\n{fit.stderr}")
        stderr = fit.stderr
    seconds = time.time() - t0
    pred, metrics = folder / f"{tag}.pred.csv", folder / f"{tag}.metrics.json"
    pcmd = [
        str(SMI),
        "predict",
        "--model",
        str(model),
        "--csv",
        str(test),
        "--out",
        str(pred),
        "--metrics",
        str(metrics),
    ]
    p = subprocess.run(pcmd, check=False, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"smi predict failed ({' '.join(pcmd)}):\n{p.stderr}")
    m = json.loads(metrics.read_text())
    m = m.get("metrics", m)
    steps = next((ln for ln in stderr.splitlines() if " steps in " in ln), stderr)
    r = Result(
        s.name,
        f"smi {tag}",
        len(s.y_train),
        len(s.y_test),
        s.x_train.shape[1],
        nll=float(m["nll"]),
        seconds=seconds,
        flags=" ".join(flags),
        load=f"{load_before} -> {load_avg()}",
        extra={"fit": steps.strip()},
    )
    if s.classification:
        with pred.open() as f:
            rows = list(csv.DictReader(f))
        cols = sorted((c for c in rows[0] if c.startswith("prob_")), key=lambda c: int(c[5:]))
        prob = np.array([[float(row[c]) for c in cols] for row in rows])
        y = s.y_test.astype(int)
        r.ece, r.mean_conf = ece_of(prob, y)
        r.accuracy = float(np.mean(prob.argmax(1) == y))
        if m.get("ece") is not None:
            # `smi predict --metrics` computes the same 10-bin ECE; keep both as a cross-check.
            r.extra["ece_smi"] = float(m["ece"])
        return r
    r.rmse = float(m["rmse"])
    if isinstance(m["coverage"], list):
        for c in m["coverage"]:
            level = round(100 * float(c["level"]))
            if level in (50, 90, 95):
                setattr(r, f"cov{level}", float(c["observed"]))
        return r
    # An older `smi predict`: one interval per call.
    r.cov90 = float(m["coverage"])
    for level in (50, 95):
        out = folder / f"{tag}.pred{level}.csv"
        icmd = [str(SMI), "predict", "--model", str(model), "--csv", str(test), "--out", str(out)]
        subprocess.run(
            [*icmd, "--interval", str(level / 100)], capture_output=True, text=True, check=True
        )
        with out.open() as f:
            rows = list(csv.DictReader(f))
        lo = np.array([float(row["lower"]) for row in rows])
        hi = np.array([float(row["upper"]) for row in rows])
        setattr(r, f"cov{level}", float(np.mean((lo <= s.y_test) & (s.y_test <= hi))))
    return r


def fmt(v: float, digits: int = 3) -> str:
    return "" if math.isnan(v) else f"{v:.{digits}f}"


def best_baselines() -> dict[str, Result]:
    """The best (lowest NLL) cached baseline of each data set."""
    best: dict[str, Result] = {}
    for path in sorted((WORK / "baselines").glob("*.json")):
        for r in (Result(**v) for v in json.loads(path.read_text())):
            if r.dataset not in best or r.nll < best[r.dataset].nll:
                best[r.dataset] = r
    return best


def table(rows: list[Result]) -> str:
    head = (
        "| data set | n train/test | d | model | time s | NLL | ratio to best baseline "
        "| cov 50/90/95 % | ECE (conf) | RMSE / acc |"
    )
    lines = [head, "|" + "---|" * 10]
    best = best_baselines()
    for r in rows:
        b = best.get(r.dataset)
        ratio = f"{r.nll / b.nll:.3f} ({b.model})" if b and r.model.startswith("smi") else ""
        covs = (r.cov50, r.cov90, r.cov95)
        cov = "/".join(fmt(c, 3) for c in covs) if r.cov90 == r.cov90 else ""
        ece = f"{r.ece:.3f} ({r.mean_conf:.3f})" if r.ece == r.ece else ""
        score = fmt(r.rmse) if r.rmse == r.rmse else fmt(r.accuracy)
        lines.append(
            f"| {r.dataset} | {r.n_train}/{r.n_test} | {r.d} | {r.model} "
            f"| {fmt(r.seconds, 1)} | {fmt(r.nll)} | {ratio} | {cov} | {ece} | {score} |"
        )
    return "\n".join(lines)


def verdict(r: Result, ratio: float) -> str:
    """The acceptance of issue 16 for one smi row: time, NLL ratio, coverage or ECE."""
    fails = []
    if r.seconds >= 120:
        fails.append("time")
    if ratio > 1.05:
        fails.append("NLL")
    if r.cov90 == r.cov90 and not 0.86 <= r.cov90 <= 0.94:
        fails.append("coverage")
    if r.ece == r.ece and r.ece > 0.05:
        fails.append("ECE")
    return "pass" if not fails else "fails " + ", ".join(fails)


def summary(log: Path, tag: str) -> None:
    """One line per data set for the smi rows of `tag`: the acceptance table."""
    rows = [Result(**json.loads(line)) for line in log.read_text().splitlines() if line]
    latest = {r.dataset: r for r in rows if r.model == f"smi {tag}"}
    best = best_baselines()
    print(
        "| data set | task | n train/test | d | smi fit s (load) | smi NLL | best baseline NLL "
        "| ratio | 90 % coverage | ECE (mean conf) | RMSE / accuracy (baseline) | acceptance |"
    )
    print("|" + "---|" * 12)
    for name, r in latest.items():
        b = best[name]
        ratio = r.nll / b.nll
        task = "regression" if r.cov90 == r.cov90 else "classification"
        load = r.load.split(" ")[0] if r.load else ""
        score = (
            f"{r.rmse:.3f} ({b.rmse:.3f})"
            if r.rmse == r.rmse
            else f"{r.accuracy:.3f} ({b.accuracy:.3f})"
        )
        ece = f"{r.ece:.3f} ({r.mean_conf:.3f})" if r.ece == r.ece else ""
        print(
            f"| {name} | {task} | {r.n_train}/{r.n_test} | {r.d} | {r.seconds:.0f} ({load}) "
            f"| {r.nll:.3f} | {b.nll:.3f} ({b.model}) | {ratio:.3f} | {fmt(r.cov90)} | {ece} "
            f"| {score} | {verdict(r, ratio)} |"
        )


def report(log: Path, tags: list[str]) -> None:
    """Prints the logged smi rows of `tags` (all when empty), with every cached baseline."""
    rows = [Result(**json.loads(line)) for line in log.read_text().splitlines() if line]
    keep = [r for r in rows if r.model.startswith("smi") and (not tags or r.model[4:] in tags)]
    names = list(dict.fromkeys(r.dataset for r in keep))
    out: list[Result] = []
    for name in names:
        path = WORK / "baselines" / f"{name}.json"
        if path.exists():
            out.extend(Result(**v) for v in json.loads(path.read_text()))
        out.extend(r for r in keep if r.dataset == name)
    print(table(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--datasets", default="diabetes,wine,breast_cancer,digits,concrete,energy,yacht,boston"
    )
    ap.add_argument("--flags", default="", help="extra `smi fit` flags, space-separated")
    ap.add_argument("--tag", default="default", help="name of this configuration")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-smi", action="store_true")
    ap.add_argument(
        "--reuse", action="store_true", help="predict with an existing model of the tag (no fit)"
    )
    ap.add_argument("--log", type=Path, default=WORK / "results.jsonl")
    ap.add_argument(
        "--report",
        nargs="*",
        metavar="TAG",
        help="print the logged fits of these tags (all without one) and exit",
    )
    ap.add_argument("--summary", metavar="TAG", help="print the acceptance table of TAG and exit")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.summary:
        summary(args.log, args.summary)
        return
    if args.report is not None:
        report(args.log, args.report)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    rows: list[Result] = []
    for name in args.datasets.split(","):
        s = load(name)
        here: list[Result] = [] if args.no_baselines else cached_baselines(s)
        if not args.no_smi:
            here.append(smi_run(s, args.flags.split(), args.tag, args.reuse))
        with args.log.open("a") as f:
            for r in here:
                f.write(json.dumps(asdict(r)) + "\n")
        rows.extend(here)
        print("\n".join(table(here).splitlines()[2:]), flush=True)
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
