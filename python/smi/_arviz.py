"""Fits as ArviZ data: ``Posterior.to_arviz()`` and ``NumPyroPosterior.to_arviz()``.

The groups are xarray Datasets, packaged as an ``InferenceData`` for ArviZ < 1 and as an
``xarray.DataTree`` for ArviZ >= 1 (its native type), so that ``az.summary`` reads either:

- ``posterior``: the draws, dims ``(chain, draw, ...)``. NUTS keeps its chains; a variational
  fit is one chain of ``num_samples`` draws from the fitted mixture (``chain`` has length 1,
  so ``az.summary``'s R-hat is not defined for it; its ESS is that of independent draws).
- ``sample_stats``: NUTS's ``diverging``, ``energy``, ``tree_depth``, ``step_size``, ``lp`` and
  ``n_steps``; a mixture's ``component``: the particle each draw came from.
- ``mixture`` (variational fits): per particle (``component``) the ``location`` and marginal
  ``scale`` of its guide and its raw guide parameters ``params``.
- ``optimization`` (variational fits): the ``elbo`` estimate and the ``loss`` of every step.
- ``observed_data``: when known (NumPyro's observed sites, or given).

The fit's diagnostics (method, termination, trusted, warnings, k-hat, ELBO and its Monte
Carlo standard error) are attributes of the ``posterior`` group.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np


def _modules() -> tuple[Any, Any]:
    try:
        import arviz as az
        import xarray as xr
    except ImportError as e:
        raise ImportError('to_arviz needs ArviZ: pip install "smi[arviz]"') from e
    return az, xr


def arviz_major(az: Any) -> int:
    """The major version of the installed ArviZ."""
    return int(str(az.__version__).split(".")[0])


def _dataset(xr: Any, arrays: Mapping[str, Any], lead: tuple[str, ...]) -> Any:
    """A Dataset of ``arrays`` whose first axes are ``lead``; further axes are named
    ``<var>_dim_<k>`` as ArviZ names them."""
    data = {}
    for name, value in arrays.items():
        a = np.asarray(value)
        extra = tuple(f"{name}_dim_{k}" for k in range(a.ndim - len(lead)))
        data[name] = ((*lead, *extra), a)
    coords = {}
    for name in lead:
        sizes = {np.asarray(v).shape[lead.index(name)] for v in arrays.values()}
        if len(sizes) == 1:
            coords[name] = np.arange(sizes.pop())
    return xr.Dataset(data, coords=coords)


def package(groups: Mapping[str, Any], *, datatree: bool | None = None) -> Any:
    """``groups`` (name → Dataset) as ArviZ data: a DataTree for ArviZ >= 1 (or ``datatree``
    True), else an InferenceData."""
    az, xr = _modules()
    if datatree is None:
        datatree = arviz_major(az) >= 1
    if datatree:
        return xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
    with warnings.catch_warnings():
        # InferenceData warns about groups outside its schema (mixture, optimization).
        warnings.simplefilter("ignore", UserWarning)
        return az.InferenceData(**groups)


def _attrs(post: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "inference_library": "smi",
        "method": post.method,
        "termination": post.termination,
        "trusted": int(post.trusted),
        "steps": int(post.steps),
        "seconds": float(post.seconds),
    }
    if post.warnings:
        attrs["warnings"] = "\n".join(post.warnings)
    for name in ("khat", "elbo", "elbo_mcse"):
        value = getattr(post, name)
        if value is not None:
            attrs[name] = float(value)
    return attrs


def groups_of(
    post: Any,
    num_samples: int,
    seed: int,
    transform: Any = None,
) -> dict[str, dict[str, Any]]:
    """The arrays of each group of ``post`` (an ``smi.Posterior``), with their leading dims:
    ``{group: {"lead": dims, "arrays": {name: array}}}``. ``transform`` maps the flat draws
    (n × d) to named arrays (NumPyro's constrained sites); without it the draws are ``theta``."""

    def named(flat: np.ndarray, shape: tuple[int, int]) -> dict[str, np.ndarray]:
        out = transform(flat) if transform is not None else {"theta": flat}
        return {k: np.asarray(v).reshape(*shape, *np.shape(v)[1:]) for k, v in out.items()}

    out: dict[str, dict[str, Any]] = {}
    if post.method == "nuts":
        chains = int(post.num_chains)
        flat = np.asarray(post.draws())
        per = flat.shape[0] // chains
        out["posterior"] = {"lead": ("chain", "draw"), "arrays": named(flat, (chains, per))}
        out["sample_stats"] = {"lead": ("chain", "draw"), "arrays": dict(post.nuts_stats())}
        return out
    flat, components = post.sample_components(num_samples, seed)
    out["posterior"] = {"lead": ("chain", "draw"), "arrays": named(np.asarray(flat), (1, -1))}
    out["sample_stats"] = {
        "lead": ("chain", "draw"),
        "arrays": {"component": np.asarray(components).reshape(1, -1)},
    }
    out["mixture"] = {
        "lead": ("component",),
        "arrays": {
            "location": np.asarray(post.locations),
            "scale": np.asarray(post.scales),
            "params": np.asarray(post.particles),
        },
    }
    out["optimization"] = {
        "lead": ("step",),
        "arrays": {"elbo": np.asarray(post.elbos), "loss": np.asarray(post.losses)},
    }
    return out


def build(
    post: Any,
    num_samples: int,
    seed: int,
    observed_data: Mapping[str, Any] | None,
    transform: Any = None,
    *,
    datatree: bool | None = None,
) -> Any:
    """ArviZ data of ``post``; see the module documentation."""
    _, xr = _modules()
    if int(num_samples) < 1:
        raise ValueError(f"num_samples must be at least 1, got {num_samples}")
    if observed_data is not None and not isinstance(observed_data, Mapping):
        raise TypeError("observed_data must map names to arrays, e.g. {'y': y}")
    parts = groups_of(post, int(num_samples), seed, transform)
    groups = {}
    for name, part in parts.items():
        groups[name] = _dataset(xr, part["arrays"], part["lead"])
    groups["posterior"].attrs.update(_attrs(post))
    if observed_data:
        obs = {k: np.asarray(v) for k, v in observed_data.items()}
        groups["observed_data"] = xr.Dataset(
            {k: (tuple(f"{k}_dim_{i}" for i in range(v.ndim)), v) for k, v in obs.items()}
        )
    return package(groups, datatree=datatree)


def from_posterior(
    post: Any,
    num_samples: int = 1000,
    seed: int = 0,
    observed_data: Mapping[str, Any] | None = None,
) -> Any:
    """``Posterior.to_arviz``: the fit of ``smi.fit`` as ArviZ data (draws named ``theta``)."""
    return build(post, num_samples, seed, observed_data)
