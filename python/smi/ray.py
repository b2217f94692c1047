"""``smi reproduce`` on a Ray cluster: the units as Ray tasks, the records gathered by the driver.

Install the extra (``pip install "smi[ray]"``), start or join a cluster, and run::

    import smi.ray

    smi.ray.reproduce("uci", datasets="yacht,energy", splits="0-4", methods="smi,svgd", out="runs/uci")

Each unit (data set × split × method, :mod:`smi.units`) runs as one Ray task asking for one CPU
(one GPU as well where the unit's fit runs on the GPU, ``device="cuda"``), in a temporary folder
on its worker; the task returns the unit's record and the driver appends it to
``<out>/<experiment>.jsonl``, so the workers need no shared file system, only the ``smi``
command (``$SMI_BIN`` or ``PATH`` on each node) and the data (``$SMI_DATA_DIR``). Ray retries a
task whose worker died (``max_retries``); a record is appended only when its task returns, so
every unit is recorded once. A rerun skips the units already recorded in ``out``; the tables are
rebuilt at the end (``smi report``). One fit is not spread over machines: it uses its node's
threads (or its GPU).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from . import units as _units

__all__ = ["reproduce"]


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            'smi.ray needs Ray: pip install "smi[ray]" (or pip install "ray[default]")'
        ) from e
    return ray


def _run(experiment: str, unit_id: str, smi_bin: str | None, options: dict[str, Any]) -> str:
    """The body of one task: the unit's record line."""
    return _units.run_unit(experiment, unit_id, smi_bin=smi_bin, **options)


def reproduce(
    experiment: str = "uci",
    *,
    out: str | os.PathLike[str],
    address: str | None = None,
    max_retries: int = 3,
    smi_bin: str | os.PathLike[str] | None = None,
    progress: bool = True,
    **options: Any,
) -> dict[str, int]:
    """Runs the units of ``smi reproduce EXPERIMENT`` with ``options`` (keyword arguments as in
    :func:`smi.units.options_to_args`: ``datasets="yacht"``, ``quick=True``) as Ray tasks and
    appends their records to ``<out>/<experiment>.jsonl``.

    Args:
        experiment: the experiment (``"uci"``).
        out: the records' folder (on the driver).
        address: the Ray cluster to join (``None``: the one already initialised in this
            process, else ``ray.init()``'s default: a running local cluster or a new one).
        max_retries: how often a task whose worker died is retried.
        smi_bin: the ``smi`` command on the workers (default: ``$SMI_BIN``, else ``PATH``).
        progress: print a line per finished unit to stderr.

    Returns:
        Counts: ``units`` (in the list), ``skipped`` (already recorded), ``ran``, ``failed``
        (recorded as failed, as a serial run records them).

    Raises:
        RuntimeError: bad options, or a unit that wrote no record even after its retries.
    """
    ray = _ray()
    smi_bin = _units.smi_binary(smi_bin)
    listed = _units.list_units(experiment, out=out, smi_bin=smi_bin, **options)
    todo = [u for u in listed if u["status"] != "done"]
    counts = {"units": len(listed), "skipped": len(listed) - len(todo), "ran": 0, "failed": 0}
    if todo:
        if not ray.is_initialized():
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        task = ray.remote(_run)
        pending = {}
        for u in todo:
            gpus = 1 if u.get("device") == "cuda" else 0
            ref = task.options(num_cpus=1, num_gpus=gpus, max_retries=max_retries).remote(
                experiment, u["id"], smi_bin, options
            )
            pending[ref] = u["id"]
        errors = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            unit_id = pending.pop(ref)
            try:
                line = ray.get(ref)
            except ray.exceptions.RayError as e:  # the task failed after its retries
                errors.append(f"{unit_id}: {e}")
                continue
            _units.append_records(out, experiment, [line])
            failed = json.loads(line).get("status") == "failed"
            counts["failed" if failed else "ran"] += 1
            if progress:
                done = counts["ran"] + counts["failed"]
                state = "failed (recorded)" if failed else "recorded"
                print(f"{experiment}: {done}/{len(todo)} {unit_id} {state}", file=sys.stderr)
        if errors:
            raise RuntimeError(f"{len(errors)} units wrote no record:\n" + "\n".join(errors))
    if counts["ran"] or counts["failed"]:
        _units.report(out, smi_bin=smi_bin)
    return counts
