"""How much of an MLP a saved mean-field SMI state still uses.

Reads a state file written by `smi reproduce uci` or `smi reproduce mnist` while a unit runs
(`runs/<experiment>/checkpoints/*.json` or `*.json.gz`; a finished unit removes its state, so
copy it before the unit ends). Each particle holds ψ = [loc (d) | ρ (d)] with σ = softplus(ρ),
and θ lays the network out layer by layer, weight (n_in × n_out, row-major) then bias, any
extra parameters (the UCI noise precision) after them.

For every layer it prints the median and 10 % quantile of σ over all particles and the share of
weights whose |loc| / σ exceeds the threshold; for every hidden layer, the number of *active*
units per particle: units with at least one outgoing weight above the threshold. A unit none
of whose outgoing weights clears it passes only noise on.

    python runs/guide_units.py STATE --sizes 8,50,50,1          # UCI energy
    python runs/guide_units.py STATE.json.gz --sizes 784,100,10  # MNIST, one layer
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
from typing import Any


def softplus(r: float) -> float:
    return math.log1p(math.exp(-abs(r))) + max(r, 0.0)


def load_state(path: str) -> dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        state: dict[str, Any] = json.load(f)["state"]
    return state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("state", help="a UCI or MNIST SMI state file (.json or .json.gz)")
    ap.add_argument("--sizes", required=True, help="layer widths, e.g. 8,50,50,1")
    ap.add_argument("--threshold", type=float, default=2.0, help="|loc|/σ of an active weight")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    st = load_state(a.state)
    m, cols = st["particles"]["rows"], st["particles"]["cols"]
    d = cols // 2
    data = st["particles"]["data"]
    layers = []  # (weight offset, n_in, n_out, bias offset)
    off = 0
    for n_in, n_out in itertools.pairwise(sizes):
        layers.append((off, n_in, n_out, off + n_in * n_out))
        off += n_in * n_out + n_out
    if off > d:
        raise SystemExit(f"--sizes need {off} parameters, the state has {d} per guide")
    rows = [data[i * cols : (i + 1) * cols] for i in range(m)]
    sigmas = [[softplus(r) for r in row[d:]] for row in rows]  # σ of every weight, per particle
    print(f"{a.state}: step {st['step']}, {m} particles, d = {d} ({d - off} beyond the network)")
    for li, (w, n_in, n_out, b) in enumerate(layers, start=1):
        for name, lo, hi in ((f"layer{li}.weight", w, b), (f"layer{li}.bias", b, b + n_out)):
            sig = sorted(sg[k] for sg in sigmas for k in range(lo, hi))
            snr = [abs(r[k]) / sg[k] for r, sg in zip(rows, sigmas) for k in range(lo, hi)]
            share = sum(x > a.threshold for x in snr) / len(snr)
            print(
                f"  {name}: σ median {sig[len(sig) // 2]:.3f}, 10 % quantile "
                f"{sig[len(sig) // 10]:.3f}; |loc|/σ > {a.threshold:g}: {share:.3f}"
            )
        if li < len(layers):
            w2, _, n2, _ = layers[li]  # the next layer's weights are this layer's outgoing ones
            active = [
                sum(
                    any(
                        abs(r[w2 + j * n2 + k]) > a.threshold * sg[w2 + j * n2 + k]
                        for k in range(n2)
                    )
                    for j in range(n_out)
                )
                for r, sg in zip(rows, sigmas)
            ]
            print(f"  hidden layer {li}: active units per particle {active} of {n_out}")


if __name__ == "__main__":
    main()
