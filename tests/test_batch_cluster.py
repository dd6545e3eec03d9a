"""``--scheduler``: a folder batch on a real Dask cluster (a scheduler and two worker
processes on localhost, started as a user would, with ``dask scheduler`` / ``dask worker``)
gives the local pool's report, with the faults of a farm: a corrupt file, a file that
hangs, and worker processes killed while they run a file.

The faults are injected by a ``sitecustomize`` module on the workers' PYTHONPATH, which
runs first in every Python process started there: in the process fixing ``hang.bvh`` it
sleeps (until ``--timeout`` kills it); in the process fixing ``killed_once.bvh`` (the
first time) or ``killed_always.bvh`` (every time) it kills its parent, the Dask worker,
as the kernel's OOM killer or a lost machine would. The killing is enabled on the Dask
workers only: under the local pool the parent is the batch itself.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

bpy = pytest.importorskip("bpy")
distributed = pytest.importorskip("distributed")

from batch_folders import differences, read_report, short_walk, short_walks, without_timings  # noqa: E402
from blender_scenes import import_clip  # noqa: E402
from cli_helpers import package_parent, run_python  # noqa: E402

GOOD = [f"take_{i:02d}.bvh" for i in range(8)] + [f"sub/take_{i:02d}.bvh" for i in range(8, 14)]
FAULTY = ["hang.bvh", "killed_once.bvh", "sub/killed_always.bvh"]
BLENDS = ["scenes/walk_a.blend", "scenes/walk_b.blend"]
TIMEOUT = 40  # seconds: far more than a 60-frame clip takes, even through Blender on a busy machine

FAULTS = '''
import os, signal, sys, time
from pathlib import Path

names = {Path(arg).name for arg in sys.argv}
if "hang.bvh" in names:
    time.sleep(3600)
marks = os.environ.get("FOOT_LOCK_TEST_KILL_PARENT")
if marks and names & {"killed_once.bvh", "killed_always.bvh"}:
    try:
        if "killed_once.bvh" in names:
            os.close(os.open(os.path.join(marks, "killed_once"), os.O_CREAT | os.O_EXCL))
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(1)
    except FileExistsError:
        pass  # killed once already: run normally
'''


@pytest.fixture(scope="module")
def folder(tmp_path_factory, walk):
    """20 clips: 14 short BVH walks and 2 .blend scenes, a corrupt file, and 3 walks that fail on purpose."""
    source = tmp_path_factory.mktemp("cluster") / "in"
    short_walks(walk, source, GOOD + FAULTY)
    for i, name in enumerate(BLENDS):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        import_clip(bpy, short_walk(walk, source.parent / "blend_sources" / f"{i}.bvh", 30 * i, 90, 1.2 + 0.1 * i))
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(source / name))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    (source / "sub" / "corrupt.bvh").write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n")
    return source


@pytest.fixture(scope="module")
def pythonpath(tmp_path_factory):
    """This repository as ``foot_lock``, and the faults' ``sitecustomize``."""
    folder = package_parent(tmp_path_factory.mktemp("pythonpath"))
    (folder / "sitecustomize.py").write_text(FAULTS)
    return folder


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory, pythonpath):
    """A Dask scheduler and two single-threaded workers (each under a nanny, which
    restarts it when it is killed); yields the scheduler's address."""
    folder = tmp_path_factory.mktemp("dask")
    marks = folder / "marks"
    marks.mkdir()
    scheduler_file = folder / "scheduler.json"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(pythonpath)
    dask = [sys.executable, "-m", "dask"]
    processes = [_start([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                         "--scheduler-file", scheduler_file], env, folder / "scheduler.log")]
    worker_env = {**env, "FOOT_LOCK_TEST_KILL_PARENT": str(marks)}
    try:
        _wait_for(scheduler_file.is_file, folder / "scheduler.log", process=processes[0])
        processes += [
            _start([*dask, "worker", "--scheduler-file", scheduler_file, "--nthreads", "1", "--no-dashboard",
                    "--name", f"worker-{i}"], worker_env, folder / f"worker-{i}.log")
            for i in range(2)
        ]
        with distributed.Client(scheduler_file=str(scheduler_file), timeout="60s") as client:
            client.wait_for_workers(2, timeout=180)
            address = client.scheduler.address
        yield address
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _start(command, env, log):
    with open(log, "w") as output:
        return subprocess.Popen([str(part) for part in command], env=env, stdout=output, stderr=subprocess.STDOUT)


def _wait_for(condition, log, seconds=120, process=None):
    """Wait until ``condition()`` (and while ``process``, if given, runs)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert process is None or process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"not ready after {seconds} s: {log.read_text()}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def runs(folder, pythonpath, scheduler, tmp_path_factory):
    """The folder fixed by the local pool and by the Dask cluster: ``{name: (result, report)}``."""
    root = tmp_path_factory.mktemp("runs")
    done = {}
    for name, engine in (("local", ["--jobs", "2"]), ("dask", ["--scheduler", scheduler])):
        result = run_python(
            ["-m", "foot_lock", "remove-sliding", folder, "-o", root / name, "--timeout", TIMEOUT,
             "--report", root / f"{name}.json", *engine],
            cwd=root, pythonpath=pythonpath,
        )
        done[name] = (result, read_report(root / f"{name}.json"), root / name)
    return done


def _entries(report, out):
    """The report's files by input, their outputs relative to the output folder ``out``."""
    return {entry["input"]: {**entry, "output": os.path.relpath(entry["output"], out)} for entry in report["files"]}


def test_the_cluster_fixes_the_folder_as_the_local_pool_does(runs, folder):
    (local, local_report, local_out), (dask, dask_report, dask_out) = runs["local"], runs["dask"]
    assert local.returncode == 1 and dask.returncode == 1, dask.stdout + dask.stderr
    assert dask_report["settings"] == local_report["settings"]
    local_files, dask_files = (_entries(r, out) for r, out in ((local_report, local_out), (dask_report, dask_out)))
    assert sorted(dask_files) == sorted(local_files) and len(dask_files) == 20
    lost = str(folder / "sub" / "killed_always.bvh")
    same = [key for key in local_files if key != lost]
    assert differences(*({key: without_timings(files[key]) for key in same} for files in (dask_files, local_files))) == []
    fixed = [entry for entry in dask_files.values() if entry["ok"]]
    assert len(fixed) == 17 and all((dask_out / entry["output"]).is_file() for entry in fixed)
    assert {clip["frames"] for entry in fixed for clip in entry["clips"]} == {60, 90}  # BVH and .blend


def test_the_same_progress_lines_and_summary(runs):
    for name in ("local", "dask"):
        lines = runs[name][0].stdout.splitlines()
        assert sorted(int(line[1:line.index("/")]) for line in lines if line.startswith("[")) == list(range(1, 21))
    assert runs["dask"][0].stdout.splitlines()[-1].startswith("Foot Lock: 20 files, 17 fixed, 3 failed (")


def test_the_corrupt_and_the_hung_file_fail_alone_on_the_cluster(runs, folder):
    _, report, _ = runs["dask"]
    entries = {entry["input"]: entry for entry in report["files"]}
    assert "BVH" in entries[str(folder / "sub" / "corrupt.bvh")]["error"]
    assert entries[str(folder / "hang.bvh")]["error"] == f"timed out after {TIMEOUT} s (--timeout)"
    assert not any(path.name.startswith(".foot_lock-partial-") for path in runs["dask"][2].rglob("*"))


def test_a_killed_worker_is_retried_once_then_the_file_is_reported(runs, folder):
    _, report, out = runs["dask"]
    entries = {entry["input"]: entry for entry in report["files"]}
    assert entries[str(folder / "killed_once.bvh")]["ok"]  # its second try, on a restarted worker
    lost = entries[str(folder / "sub" / "killed_always.bvh")]
    assert not lost["ok"] and "Dask worker was lost 2 times" in lost["error"]
    assert not (out / "sub" / "killed_always.bvh").exists()
    assert report["summary"]["failed"] == sorted(
        str(folder / name) for name in ("hang.bvh", "sub/corrupt.bvh", "sub/killed_always.bvh"))


# --- local:N, and a stop -----------------------------------------------------------------


def test_a_local_dask_cluster_gives_the_local_pools_report(runs, folder, pythonpath, tmp_path):
    """``local:2`` on the shard 1/4 of the folder (four BVH walks and a .blend; no fault
    fires outside the Dask workers started above): the local pool's figures for them."""
    result = run_python(
        ["-m", "foot_lock", "remove-sliding", folder, "-o", tmp_path / "out", "--scheduler", "local:2",
         "--shard", "1/4", "--report", tmp_path / "report.json"], cwd=tmp_path, pythonpath=pythonpath,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    files = _entries(read_report(tmp_path / "report.json"), tmp_path / "out")
    local = _entries(runs["local"][1], runs["local"][2])
    assert len(files) == 5 and any(key.endswith(".blend") for key in files)
    assert differences(without_timings(files), without_timings({key: local[key] for key in files})) == []


def test_a_stopped_cluster_run_ends_its_processes_on_the_workers(folder, pythonpath, scheduler, tmp_path):
    """SIGTERM while the cluster runs the shard 3/4 (with the hung file): exit status 143,
    the hung file's process on its Dask worker is killed, no partial output is left and the
    report lists what did not finish."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = [sys.executable, "-m", "foot_lock", "remove-sliding", folder, "-o", tmp_path / "out", "--scheduler",
               scheduler, "--shard", "3/4", "--timeout", 600, "--report", tmp_path / "report.json"]
    with open(tmp_path / "log", "w") as log:
        run = subprocess.Popen([str(part) for part in command], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                               env={**env, "PYTHONPATH": str(pythonpath)})
    hung = str(folder / "hang.bvh")
    _wait_for(lambda: _processes_with(hung), tmp_path / "log", process=run)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=120) == 143, (tmp_path / "log").read_text()
    _wait_for(lambda: not _processes_with(hung), tmp_path / "log", seconds=30)
    summary = read_report(tmp_path / "report.json")["summary"]
    assert summary["stopped"] == "stopped by SIGTERM" and hung in summary["unfinished"]
    assert not any(path.name.startswith(".foot_lock-partial-") for path in (tmp_path / "out").rglob("*"))


def _processes_with(argument):
    """The ids of the processes whose command line has ``argument``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                arguments = cmdline.read().decode(errors="replace").split("\0")
        except OSError:
            continue  # it ended meanwhile
        if argument in arguments:
            found.append(int(pid))
    return found


def test_the_engines_benchmark_runs(walk, tmp_path, capsys):
    """benchmarks/batch_engines.py on two clips (its figures are for the notes, not a test)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import batch_engines

    seconds = batch_engines.engine_figures(walk, clips=2, workers=2, folder=tmp_path)
    assert {name: len(runs) for name, runs in seconds.items()} == {"local pool": 2, "Dask local": 2}
    assert "same figures for every clip: yes" in capsys.readouterr().out
