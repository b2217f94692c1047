"""The units of ``smi reproduce``: list them, run one by its id, read its record.

An experiment such as ``smi reproduce uci`` is a fixed list of units (data set × split × method);
each unit appends one JSON line to ``<out>/<experiment>.jsonl``. These functions address the
units one at a time through the ``smi`` command, so that a launcher (``smi.ray``, a Slurm array,
your own) can spread them over machines::

    import smi.units as units

    todo = [u for u in units.list_units("uci", out="runs/uci", quick=True) if u["status"] != "done"]
    line = units.run_unit("uci", todo[0]["id"], quick=True)
    units.append_records("runs/uci", "uci", [line])

A unit runs in a folder of its own, so no shared file system is needed; its record is the line a
run of the whole list writes, byte for byte except the timings (``seconds``, ``cpu_seconds``,
``metrics.seconds_per_step``). Units are listed by ``smi reproduce uci --list --json`` and run by
``smi reproduce uci --unit ID``; other experiments have no unit ids yet.

The ``smi`` command is found as ``$SMI_BIN``, else ``smi`` on ``PATH`` (``cargo install --path
crates/smi-cli``, or ``target/release/smi`` of a build of this repository).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "EXPERIMENTS",
    "TIMING_FIELDS",
    "append_records",
    "list_units",
    "options_to_args",
    "read_records",
    "report",
    "run_unit",
    "smi_binary",
    "without_timings",
]

#: The experiments whose units have ids.
EXPERIMENTS = ("uci",)

#: Record fields that measure time: they differ between any two runs of one unit.
TIMING_FIELDS = ("seconds", "cpu_seconds", "metrics.seconds_per_step")


def smi_binary(smi_bin: str | os.PathLike[str] | None = None) -> str:
    """The ``smi`` command: ``smi_bin``, else ``$SMI_BIN``, else ``smi`` on ``PATH``.

    Raises:
        FileNotFoundError: none of them is an executable file.
    """
    for candidate in (smi_bin, os.environ.get("SMI_BIN")):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path.resolve())
            raise FileNotFoundError(f"the smi command {str(path)!r} is not an executable file")
    found = shutil.which("smi")
    if found is None:
        raise FileNotFoundError(
            "no `smi` command: set SMI_BIN to its path (e.g. target/release/smi after "
            "`cargo build --release -p smi-cli`) or put it on PATH"
        )
    return found


def _env() -> dict[str, str]:
    """The environment of a unit's command: no progress lines, errors without backtraces."""
    return dict(os.environ, SMI_NO_PROGRESS="1", RUST_BACKTRACE="0", RUST_LIB_BACKTRACE="0")


def options_to_args(options: Mapping[str, Any]) -> list[str]:
    """Command-line options of ``smi reproduce`` from keyword arguments: ``quick=True`` is
    ``--quick``, ``datasets="yacht,energy"`` is ``--datasets yacht,energy``, a list is joined
    with commas; ``False`` and ``None`` are left out."""
    args: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def _check(experiment: str) -> None:
    if experiment not in EXPERIMENTS:
        raise ValueError(
            f"experiment {experiment!r} has no unit ids; these have: {', '.join(EXPERIMENTS)}"
        )


def _checked_options(options: Mapping[str, Any]) -> list[str]:
    for reserved in ("out", "unit", "list", "json", "shard"):
        if reserved in options:
            raise ValueError(f"{reserved!r} is set by the launcher, not an option of a unit")
    return options_to_args(options)


def list_units(
    experiment: str,
    *,
    out: str | os.PathLike[str],
    smi_bin: str | os.PathLike[str] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """The units of ``smi reproduce EXPERIMENT`` with ``options``, with their status in ``out``:
    dicts with ``index``, ``id``, ``status`` (``done``, ``pending``, ``failed``, ``tune``),
    ``saved_step`` and ``device`` (``cpu`` or ``cuda``).

    Raises:
        RuntimeError: the command refused the options (its message included).
    """
    _check(experiment)
    cmd = [smi_binary(smi_bin), "reproduce", experiment, *_checked_options(options)]
    cmd += ["--out", str(out), "--list", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr.strip()}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def run_unit(
    experiment: str,
    unit_id: str,
    *,
    smi_bin: str | os.PathLike[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> str:
    """Runs the unit ``unit_id`` of ``smi reproduce EXPERIMENT`` with ``options`` in a folder of
    its own (a temporary one unless ``workdir``) and returns its record: the JSON line a run of
    the whole list appends, with its newline. A unit whose fit failed returns its failed record
    (``"status": "failed"``), as a serial run records it.

    Raises:
        RuntimeError: the command wrote no record (bad options, missing data); its message is
            included.
    """
    _check(experiment)
    args = _checked_options(options)
    with tempfile.TemporaryDirectory(prefix="smi-unit-", dir=workdir) as tmp:
        cmd = [smi_binary(smi_bin), "reproduce", experiment, *args]
        cmd += ["--unit", unit_id, "--out", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_env())
        path = Path(tmp) / f"{experiment}.jsonl"
        lines = path.read_text().splitlines(keepends=True) if path.exists() else []
        if not lines:
            raise RuntimeError(
                f"unit {unit_id}: {' '.join(cmd)} wrote no record (exit {done.returncode}):\n"
                f"{done.stderr.strip()[-2000:]}"
            )
        return lines[-1]


def append_records(out: str | os.PathLike[str], experiment: str, lines: Iterable[str]) -> Path:
    """Appends record ``lines`` (as :func:`run_unit` returns them) to
    ``<out>/<experiment>.jsonl``, creating the folder; each line is written whole in one append,
    so concurrent appenders never interleave within a line. Returns the file's path."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{experiment}.jsonl"
    for line in lines:
        text = line if line.endswith("\n") else line + "\n"
        json.loads(text)  # a record is one JSON object
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    return path


def without_timings(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` less its :data:`TIMING_FIELDS` (for comparing runs of the same unit)."""
    out = json.loads(json.dumps(record))
    for field in TIMING_FIELDS:
        *parents, leaf = field.split(".")
        node: Any = out
        for p in parents:
            node = node.get(p, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(leaf, None)
    return out


def report(
    out: str | os.PathLike[str],
    *,
    smi_bin: str | os.PathLike[str] | None = None,
) -> None:
    """Rebuilds the tables and figures of every experiment recorded in ``out`` (``smi report``).

    Raises:
        RuntimeError: the report failed (its message included).
    """
    cmd = [smi_binary(smi_bin), "report", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr.strip()}")


def read_records(out: str | os.PathLike[str], experiment: str) -> list[dict[str, Any]]:
    """The records of ``<out>/<experiment>.jsonl`` (empty when there is none)."""
    path = Path(out) / f"{experiment}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
