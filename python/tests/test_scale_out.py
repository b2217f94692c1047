"""Many fits past one machine: experiment units by id, a Slurm array (simulated), Ray tasks and
scikit-learn searches under joblib's Ray backend.

Every check compares with a serial run of the same quick UCI plan (yacht, standard split 0,
200 steps): the records must be the same, timings aside (:data:`smi.units.TIMING_FIELDS`, the
only fields two runs of one unit may differ in). They need the ``smi`` command
(``$SMI_BIN``, else ``target/release/smi`` of this checkout, which ``./dev/test`` builds) and
the yacht data (``$SMI_DATA_DIR``, else ``../shared/data``); without them they are skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from smi import units

REPO = Path(__file__).resolve().parents[2]
#: The plan of every test: the quick UCI plan (yacht, standard split 0, six methods, 200 steps;
#: seconds each).
PLAN: dict[str, Any] = {"quick": True}
UNITS = [f"yacht/std0/{m}" for m in ("asvgd", "map", "nuts", "ovi", "smi", "svgd")]


def _smi_bin() -> str:
    found = os.environ.get("SMI_BIN") or str(REPO / "target" / "release" / "smi")
    if not (Path(found).is_file() and os.access(found, os.X_OK)):
        pytest.skip("no smi command (build it: cargo build --release -p smi-cli)")
    return found


def _data_dir() -> str:
    found = os.environ.get("SMI_DATA_DIR") or str(REPO.parent / "shared" / "data")
    if not (Path(found) / "uci").is_dir():
        pytest.skip("no UCI data (set SMI_DATA_DIR)")
    return found


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The smi command, the data and a serial run of :data:`PLAN`."""
    smi_bin, data = _smi_bin(), _data_dir()
    os.environ["SMI_DATA_DIR"] = data
    serial = tmp_path_factory.mktemp("serial")
    cmd = [smi_bin, "reproduce", "uci", *units.options_to_args(PLAN), "--out", str(serial)]
    subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, SMI_NO_PROGRESS="1"))
    return {"bin": smi_bin, "serial": serial}


def _by_unit(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Records keyed by data set, split and method, timings removed; a unit recorded twice
    fails the test."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        key = f"{r['dataset']}/{r['split_kind']}{r['split']}/{r['method']}"
        assert key not in out, f"{key} recorded twice"
        out[key] = units.without_timings(r)
    return out


def _same_as_serial(env: dict[str, Any], out: Path) -> None:
    got = _by_unit(units.read_records(out, "uci"))
    want = _by_unit(units.read_records(env["serial"], "uci"))
    assert got == want


def _report_without_timings(env: dict[str, Any], out: Path, tmp: Path) -> str:
    """The uci.md that `smi report` writes from the records of `out`, their timings zeroed (the
    report prints CPU hours and seconds per step)."""
    folder = tmp / f"report-{out.name}"
    folder.mkdir()
    lines = []
    for r in units.read_records(out, "uci"):
        r["seconds"], r["cpu_seconds"] = 0.0, 0.0
        r["metrics"]["seconds_per_step"] = 0.0
        lines.append(json.dumps(r) + "\n")
    lines.sort()
    units.append_records(folder, "uci", lines)
    units.report(folder, smi_bin=env["bin"])
    return (folder / "uci.md").read_text()


def test_units_are_listed_and_run_one_by_one(env: dict[str, Any], tmp_path: Path) -> None:
    listed = units.list_units("uci", out=tmp_path, smi_bin=env["bin"], **PLAN)
    assert sorted(u["id"] for u in listed) == UNITS
    assert {u["status"] for u in listed} == {"pending"}
    assert all(u["device"] == "cpu" and u["saved_step"] is None for u in listed)
    lines = [units.run_unit("uci", u["id"], smi_bin=env["bin"], **PLAN) for u in listed]
    units.append_records(tmp_path, "uci", lines)
    _same_as_serial(env, tmp_path)
    listed = units.list_units("uci", out=tmp_path, smi_bin=env["bin"], **PLAN)
    assert {u["status"] for u in listed} == {"done"}
    with pytest.raises(RuntimeError, match="no such unit"):
        units.run_unit("uci", "yacht/std0/bogus", smi_bin=env["bin"], **PLAN)
    with pytest.raises(ValueError, match="set by the launcher"):
        units.list_units("uci", out=tmp_path, smi_bin=env["bin"], shard="0/2")


def test_a_simulated_slurm_array_gathers_the_serial_report(
    env: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    script = REPO / "dev" / "slurm" / "uci-array.sbatch"
    base = dict(os.environ, SMI_BIN=env["bin"], SMI_OUT=str(out), SLURM_ARRAY_TASK_COUNT="3")
    args = units.options_to_args(PLAN)
    tasks = [
        subprocess.Popen(
            ["bash", str(script), *args],
            env=dict(base, SLURM_ARRAY_TASK_ID=str(i)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i in range(3)
    ]
    for t in tasks:
        _, err = t.communicate(timeout=600)
        assert t.returncode == 0, err.decode()
    gather = [str(REPO / "dev" / "slurm" / "gather.sh"), "uci"]
    subprocess.run(["bash", *gather], env=base, check=True, capture_output=True)
    _same_as_serial(env, out)
    # A second gather and a rerun of the array add nothing.
    subprocess.run(["bash", *gather], env=base, check=True, capture_output=True)
    rerun = subprocess.run(
        ["bash", str(script), *args],
        env=dict(base, SLURM_ARRAY_TASK_ID="0"),
        check=True,
        capture_output=True,
        text=True,
    )
    assert "0 units run" in rerun.stderr
    subprocess.run(["bash", *gather], env=base, check=True, capture_output=True)
    _same_as_serial(env, out)
    assert _report_without_timings(env, out, tmp_path) == _report_without_timings(
        env, env["serial"], tmp_path
    )


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_runs_the_units_as_the_serial_run(
    env: dict[str, Any], ray_cluster: Any, tmp_path: Path
) -> None:
    import smi.ray

    counts = smi.ray.reproduce("uci", out=tmp_path, smi_bin=env["bin"], progress=False, **PLAN)
    assert counts == {"units": 6, "skipped": 0, "ran": 6, "failed": 0}
    _same_as_serial(env, tmp_path)
    assert (tmp_path / "uci.md").exists()
    again = smi.ray.reproduce("uci", out=tmp_path, smi_bin=env["bin"], progress=False, **PLAN)
    assert again == {"units": 6, "skipped": 6, "ran": 0, "failed": 0}
    _same_as_serial(env, tmp_path)


def _unit_processes() -> list[tuple[int, int]]:
    """(pid, parent pid) of every running `smi reproduce ... --unit` process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if b"reproduce" in cmd and b"--unit" in cmd:
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            found.append((int(entry.name), ppid))
    return found


def test_a_killed_ray_worker_still_records_every_unit_once(
    env: dict[str, Any], ray_cluster: Any, tmp_path: Path
) -> None:
    import smi.ray

    killed: list[int] = []
    stop = threading.Event()

    def kill_first_worker() -> None:
        # The first Ray worker seen running a unit is killed (SIGKILL) mid-unit, with its fit.
        while not stop.is_set() and not killed:
            for pid, ppid in _unit_processes():
                for victim in (ppid, pid):
                    try:
                        os.kill(victim, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                killed.append(ppid)
                break
            time.sleep(0.005)

    killer = threading.Thread(target=kill_first_worker)
    killer.start()
    try:
        # Longer fits than the quick plan's 200 steps, so that a unit is caught running.
        plan = dict(PLAN, max_steps=800)
        counts = smi.ray.reproduce(
            "uci", out=tmp_path, smi_bin=env["bin"], progress=False, max_retries=2, **plan
        )
    finally:
        stop.set()
        killer.join()
    assert killed, "no unit was seen running"
    assert counts["ran"] == 6
    got = _by_unit(units.read_records(tmp_path, "uci"))
    assert sorted(got) == [u.replace("std0", "standard0") for u in UNITS]


def test_grid_search_runs_under_joblibs_ray_backend(ray_cluster: Any) -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("sklearn")
    import joblib
    import smi
    from ray.util.joblib import register_ray
    from sklearn.model_selection import GridSearchCV

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2))
    y = x[:, 0] - 0.5 * x[:, 1] + 0.1 * rng.normal(size=60)
    register_ray()
    search = GridSearchCV(
        smi.BNNRegressor(hidden=(8,), max_steps=200, elbo_draws=2, n_draws=50),
        {"lr": [1e-2, 1e-3]},
        cv=2,
        n_jobs=2,
    )
    with joblib.parallel_backend("ray"):
        search.fit(x, y)
    assert search.best_params_["lr"] in (1e-2, 1e-3)
    assert np.isfinite(search.best_score_)


def test_grid_search_runs_under_joblibs_dask_backend() -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("sklearn")
    distributed = pytest.importorskip("dask.distributed")
    import joblib
    import smi
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    y = x[:, 0] + 0.1 * rng.normal(size=60)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        with distributed.Client(cluster), joblib.parallel_backend("dask"):
            scores = cross_val_score(
                smi.BNNRegressor(hidden=(8,), max_steps=200, elbo_draws=2, n_draws=50),
                x,
                y,
                cv=3,
                n_jobs=2,
            )
    finally:
        cluster.close()
    assert scores.shape == (3,)
    assert np.isfinite(scores).all()
