"""Probes of the command line as a careful pipeline engineer runs it (issue 14), on BVH
files, so without Blender: inputs never written, atomic outputs, bounded work, clean
stops, no NaN, one line per error, bytes kept. Every hostile input is built here.
"""

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import header_bytes, run_python
from cli_probes import (
    CORRUPT,
    processes_mentioning,
    read_until,
    small_bvh,
    start_cli,
    wait_for,
    walk_text,
    write_text,
    zero_length_legs,
)
from foot_lock.solvers import bvh


def cli(*argv):
    from foot_lock.cli import main

    return main([str(arg) for arg in argv])


def strict_json(path):
    """The JSON document at ``path``; fails on NaN or Infinity, which JSON does not have."""
    def refuse(constant):
        raise AssertionError(f"{path} holds {constant}: not JSON")

    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=refuse)


@pytest.fixture
def clip(tmp_path, walk):
    """A copy of the walk to fix, and its bytes."""
    path = tmp_path / "clip.bvh"
    path.write_bytes(walk.read_bytes())
    return path


# --- 1. never touch an input ------------------------------------------------------------


def same_file_names(tmp_path, clip):
    (tmp_path / "dir").mkdir()
    (tmp_path / "link.bvh").symlink_to(clip)
    os.link(clip, tmp_path / "hard.bvh")
    return {
        "itself": clip, "through ..": tmp_path / "dir" / ".." / clip.name,
        "a symlink to it": tmp_path / "link.bvh", "a hard link to it": tmp_path / "hard.bvh",
    }


@pytest.mark.parametrize("name", ["itself", "through ..", "a symlink to it", "a hard link to it"])
def test_an_output_or_report_that_is_the_input_is_refused_before_any_work(tmp_path, clip, name, capsys):
    before = clip.read_bytes()
    other = same_file_names(tmp_path, clip)[name]
    assert cli("remove-sliding", clip, "-o", other) == 1
    assert "is the input" in capsys.readouterr().out
    assert cli("remove-sliding", clip, "-o", tmp_path / "out.bvh", "--report", other) == 1
    assert "is the input" in capsys.readouterr().out
    assert clip.read_bytes() == before and not (tmp_path / "out.bvh").exists()


@pytest.mark.parametrize("suffix", [".fbx", ".glb", ".blend"])
def test_other_formats_over_their_input_are_refused_without_blender(tmp_path, suffix, capsys):
    source = tmp_path / f"scene{suffix}"
    source.write_bytes(b"not looked at")
    assert cli("remove-sliding", source, "-o", tmp_path / "x" / ".." / source.name) == 1
    assert "is the input" in capsys.readouterr().out and source.read_bytes() == b"not looked at"
    assert sorted(path.name for path in tmp_path.iterdir()) == [source.name]  # no .blend1 either


def test_an_output_folder_that_is_or_is_inside_the_input_folder_is_refused(tmp_path, clip, capsys):
    folder = tmp_path / "shots"
    folder.mkdir()
    clip.rename(folder / "a.bvh")
    for output in (folder, folder / "fixed", tmp_path / "shots" / "." / "fixed" / "deeper"):
        assert cli("remove-sliding", folder, "-o", output) == 1
        assert "inside the input folder" in capsys.readouterr().out
    assert sorted(path.name for path in folder.iterdir()) == ["a.bvh"]


def test_a_symlinked_folder_inside_the_output_tree_is_not_written_through(tmp_path, clip, capsys):
    source, output, elsewhere = tmp_path / "in", tmp_path / "out", tmp_path / "elsewhere"
    (source / "sub").mkdir(parents=True)
    clip.rename(source / "sub" / "a.bvh")
    output.mkdir()
    elsewhere.mkdir()
    (elsewhere / "a.bvh").write_text("someone else's file")
    (output / "sub").symlink_to(elsewhere, target_is_directory=True)
    assert cli("remove-sliding", source, "-o", output) == 1
    assert "through a symlinked folder" in capsys.readouterr().out
    assert (elsewhere / "a.bvh").read_text() == "someone else's file"


# --- 2. atomic outputs ------------------------------------------------------------------


def test_a_symlink_at_the_output_is_replaced_not_written_through(tmp_path, clip):
    outside = tmp_path / "outside.bvh"
    outside.write_text("someone else's file")
    target = tmp_path / "out.bvh"
    target.symlink_to(outside)
    assert cli("remove-sliding", clip, "-o", target) == 0
    assert outside.read_text() == "someone else's file"
    assert not target.is_symlink() and bvh.read(target).values.shape == (317, 96)


def test_a_write_that_fails_leaves_the_previous_output_and_no_partial_file(tmp_path, walk):
    from foot_lock.solvers.atomic_files import atomic_output

    target = tmp_path / "out.bvh"
    target.write_text("the previous good output")
    parsed = bvh.read(walk)
    skeleton, motion = bvh.to_motion(parsed)
    motion.rot[40, skeleton.index("LeftLeg")] = np.nan  # a solver gone wrong
    with pytest.raises(ValueError, match="not numbers"), atomic_output(target) as temp:
        bvh.write(temp, parsed, motion, 1.0, rotation_joints=[skeleton.index("LeftLeg")])
    assert target.read_text() == "the previous good output"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.bvh"]


def kill_9_mid_write(script, source, target, pythonpath):
    """Run ``script`` (``sys.argv[1:]``: ``source``, ``target``) and kill -9 it once the
    write of ``target`` is under way: bytes in a file beside it, or in ``target`` itself
    for a writer that is not atomic. Returns the files beside ``target`` then."""
    previous = target.read_bytes()

    def under_way():
        beside = [path for path in target.parent.iterdir() if path != target and _size(path)]
        return beside or target.read_bytes() != previous

    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    process = subprocess.Popen([sys.executable, "-c", script, str(source), str(target)],
                               env={**env, "PYTHONPATH": str(pythonpath)}, cwd=target.parent)
    partial = wait_for(under_way)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL  # killed, not finished: the write was under way
    return partial


def _size(path):
    """Bytes in ``path``, 0 once it is gone (renamed into place meanwhile)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def test_kill_9_while_writing_a_100000_frame_bvh_leaves_the_previous_output(tmp_path, pythonpath):
    source = write_text(tmp_path / "long.bvh", small_bvh(100_000))
    target = tmp_path / "out" / "long.bvh"
    target.parent.mkdir()
    target.write_text("the previous good output")
    writer = (
        "import sys\n"
        "from pathlib import Path\n"
        "from foot_lock.solvers import bvh\n"
        "from foot_lock.solvers.atomic_files import atomic_output\n"
        "parsed = bvh.read(sys.argv[1])\n"
        "skeleton, motion = bvh.to_motion(parsed)\n"
        "with atomic_output(Path(sys.argv[2])) as temp:\n"
        "    bvh.write(temp, parsed, motion, 1.0, rotation_joints=[0, 1], location_joints=[0])\n"
    )
    partial = kill_9_mid_write(writer, source, target, pythonpath)
    assert target.read_text() == "the previous good output"
    assert partial[0].name.startswith(".foot_lock-partial-")  # what remains is named as unfinished
    # A rerun over the same output writes it whole.
    assert run_python(["-c", writer.replace("rotation_joints=[0, 1], ", ""), source, target], cwd=tmp_path,
                      pythonpath=pythonpath).returncode == 0
    assert bvh.read(target).tokens.shape == (100_000, 9)


def test_kill_9_while_writing_a_sliding_copy_leaves_the_previous_one(tmp_path, pythonpath):
    """The demo's and the tests' sliding clips are written like every output (atomically)."""
    source = write_text(tmp_path / "long.bvh", small_bvh(100_000))
    target = tmp_path / "out" / "sliding.bvh"
    target.parent.mkdir()
    target.write_text("the previous sliding copy")
    writer = "import sys\nfrom foot_lock.solvers import bvh\nbvh.write_sliding_copy(sys.argv[1], sys.argv[2], 1.25)\n"
    partial = kill_9_mid_write(writer, source, target, pythonpath)
    assert target.read_text() == "the previous sliding copy"
    assert partial[0].name.startswith(".foot_lock-partial-")
    # Written whole when not interrupted, even over its own source (as tests/batch_folders.py does).
    assert run_python(["-c", writer, source, target], cwd=tmp_path, pythonpath=pythonpath).returncode == 0
    assert run_python(["-c", writer, target, target], cwd=tmp_path, pythonpath=pythonpath).returncode == 0
    assert bvh.read(target).tokens.shape == (100_000, 9)
    assert set(target.parent.iterdir()) == {target, partial[0]}  # only what the kill left: a rerun adds none


# --- 3. bounded work --------------------------------------------------------------------


@pytest.mark.parametrize("frame_time", ["1e-8", "1e-300", "20"])
def test_absurd_frame_times_are_refused_with_a_clear_message(tmp_path, walk, frame_time, capsys):
    source = write_text(tmp_path / "clip.bvh", walk_text(walk).replace("Frame Time: .0083333", f"Frame Time: {frame_time}"))
    assert cli("remove-sliding", source, "-o", tmp_path / "out.bvh") == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (f"FAILED {source}: BVH Frame Time {frame_time} s is not a clip's: the frame rate must be "
                    "1 to 1000 frames per second")


def test_jobs_are_capped_by_free_memory_and_the_cap_is_said(monkeypatch, capsys):
    from foot_lock.cli import batch

    monkeypatch.setattr(batch, "available_memory", lambda: 3.2e9)
    assert batch.capped_by_memory(8, [Path("a.fbx"), Path("b.bvh")]) == 2
    assert capsys.readouterr().out == ("Foot Lock: 2 workers instead of 8 (--jobs): 3.2 GB of memory is free and "
                                       "a worker may need 1.5 GB\n")
    assert batch.capped_by_memory(8, [Path("a.bvh")]) == 6  # BVH workers need less
    assert batch.capped_by_memory(4, [Path("a.fbx")]) == 2
    monkeypatch.setattr(batch, "available_memory", lambda: 64e9)
    assert batch.capped_by_memory(8, [Path("a.fbx")]) == 8 and capsys.readouterr().out.count("instead") == 2
    assert batch.available_memory() is not None  # /proc/meminfo or sysconf on this machine


def folder_of(tmp_path, walk, count):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(count):
        (folder / f"clip_{i}.bvh").write_bytes(walk.read_bytes())
    return folder


def test_a_stopped_worker_is_killed_at_the_timeout_and_the_batch_goes_on(tmp_path, walk, pythonpath):
    """A SIGSTOPped worker (as a hung one) would stall the batch forever without --timeout."""
    folder = folder_of(tmp_path, walk, 2)
    out = tmp_path / "out"
    process = start_cli(["remove-sliding", folder, "-o", out, "--jobs", "2", "--timeout", "20",
                         "--report", tmp_path / "r.json"], tmp_path, pythonpath)
    (worker,) = wait_for(lambda: processes_mentioning(str(folder / "clip_0.bvh")), step=0.001)
    os.kill(worker, signal.SIGSTOP)
    stdout, _ = process.communicate(timeout=300)
    assert process.returncode == 1
    assert f"FAILED {folder / 'clip_0.bvh'}: timed out after 20 s (--timeout)" in stdout
    assert f"ok {folder / 'clip_1.bvh'}" in stdout
    assert processes_mentioning(str(folder)) == []
    report = strict_json(tmp_path / "r.json")
    assert report["summary"]["failed"] == [str(folder / "clip_0.bvh")]
    assert not (out / "clip_0.bvh").exists() and list(out.glob(".foot_lock-partial-*")) == []


def running_its_command(pids):
    """The pids that have become the worker itself (past the launcher that arms the death signal)."""
    return [pid for pid in pids if b".prctl(" not in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_workers_end_with_a_batch_killed_outright(tmp_path, walk, pythonpath):
    """kill -9 runs no handler that could end the workers (a batch, or a Dask worker, lost
    outright): each worker dies with the thread that started it, so a hung one cannot
    outlive the timeout that died with its parent."""
    folder = folder_of(tmp_path, walk, 2)
    process = start_cli(["remove-sliding", folder, "-o", tmp_path / "out", "--jobs", "2", "--timeout", "3000"],
                        tmp_path, pythonpath)
    (worker,) = wait_for(lambda: running_its_command(processes_mentioning(str(folder / "clip_0.bvh"))))
    os.kill(worker, signal.SIGSTOP)  # hung: only the parent's timeout would ever have ended it
    process.kill()
    process.communicate(timeout=60)
    assert wait_for(lambda: processes_mentioning(str(folder)) == [], limit=30)


# --- 4. clean stops ---------------------------------------------------------------------


@pytest.mark.parametrize(("how", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_batch_of_ten_cleanly(tmp_path, walk, pythonpath, how, status):
    folder = folder_of(tmp_path, walk, 10)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out, report = tmp_path / "out", tmp_path / "report.json"
    process = start_cli(["remove-sliding", folder, "-o", out, "--jobs", "2", "--report", report],
                        tmp_path, pythonpath, env={"TMPDIR": str(scratch)})
    before = read_until(process, lambda line: line.startswith("[1/10]"))
    process.send_signal(how)
    after, stderr = process.communicate(timeout=120)
    assert process.returncode == status, before + [after, stderr]
    assert "Traceback" not in stderr + after and f"stopped by {how.name}" in after
    assert processes_mentioning(str(folder)) == []  # no orphan worker
    assert list(scratch.iterdir()) == []  # the workers' temporary folder is gone
    document = strict_json(report)
    fixed = [record["input"] for record in document["files"]]
    assert 1 <= len(fixed) < 10 and all(record["ok"] for record in document["files"])
    assert document["summary"]["stopped"] == f"stopped by {how.name}"
    assert sorted(fixed + document["summary"]["unfinished"]) == sorted(str(p) for p in folder.iterdir())
    written = {path.name for path in out.iterdir()} if out.exists() else set()
    # Every file reported is written, whole; nothing half-written is left.
    assert {Path(name).name for name in fixed} <= written <= {path.name for path in folder.iterdir()}


# --- 5. no NaN written or reported as success -------------------------------------------


def test_legs_of_no_length_are_refused_before_anything_is_written(tmp_path, walk, capsys):
    source = write_text(tmp_path / "flat.bvh", zero_length_legs(walk_text(walk)))
    report = tmp_path / "r.json"
    for unit in ([], ["--bvh-unit-scale", "0.056444"]):  # without a unit to guess, the solver refuses
        assert cli("remove-sliding", source, "-o", tmp_path / "out.bvh", "--report", report, *unit) == 1
        out = capsys.readouterr().out
        assert out.startswith(f"FAILED {source}: ") and ("no length" in out or "zero length" in out), out
        assert not (tmp_path / "out.bvh").exists()
        assert strict_json(report)["summary"]["failed"] == [str(source)]


def test_the_report_is_strict_json_with_null_for_a_figure_that_is_not_a_number(tmp_path):
    from foot_lock.cli.report import FileRecord, write_report

    clip = {"before": {"toe_slide_cm_s": float("nan")}, "after": {"toe_slide_cm_s": float("inf")}}
    write_report(tmp_path / "r.json", [FileRecord("in.bvh", "out.bvh", ok=True, clips=[clip])], {"x": 1.0})
    (record,) = strict_json(tmp_path / "r.json")["files"]
    assert record["clips"][0] == {"before": {"toe_slide_cm_s": None}, "after": {"toe_slide_cm_s": None}}


# --- 6. one line per error; bytes kept --------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_a_corrupt_bvh_is_one_line_naming_the_file_and_the_problem(tmp_path, walk, name, capsys):
    change, words = CORRUPT[name]
    source = write_text(tmp_path / f"{name}.bvh", change(walk_text(walk)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy warning would be a second line
        assert cli("remove-sliding", source, "-o", tmp_path / "out.bvh", "--report", tmp_path / "r.json") == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    (line,) = captured.out.splitlines()
    assert line.startswith(f"FAILED {source}: ") and words in line, line
    assert not (tmp_path / "out.bvh").exists()
    assert strict_json(tmp_path / "r.json")["files"][0]["error"] == line.split(": ", 1)[1]


def test_a_batch_of_corrupt_files_prints_one_line_each_and_no_traceback(tmp_path, walk, pythonpath):
    folder = tmp_path / "in"
    folder.mkdir()
    for name, (change, _) in CORRUPT.items():
        write_text(folder / f"{name}.bvh", change(walk_text(walk)))
    (folder / "good.bvh").write_bytes(walk.read_bytes())
    result = run_python(["-m", "foot_lock", "remove-sliding", folder, "-o", tmp_path / "out", "--jobs", "2"],
                        cwd=tmp_path, pythonpath=pythonpath)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    count = len(CORRUPT) + 1
    assert len(lines) == count + 1 and lines[-1].startswith(f"Foot Lock: {count} files, 1 fixed, {count - 1} failed")
    assert sum(f" FAILED {folder}/" in line for line in lines) == count - 1


def test_an_output_or_report_under_a_file_is_refused_before_any_work(tmp_path, clip, capsys):
    """A file standing where a folder of the output or the report must be made: refused up
    front, naming both, not Python's "[Errno 17] File exists" after the work (nor, for the
    report, after the output was written)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for output, report in ((tmp_path / "out.bvh", blocker / "r.json"), (blocker / "deeper" / "out.bvh", None)):
        assert cli("remove-sliding", clip, "-o", output, *(["--report", report] if report else [])) == 1
        unwritable = report or output
        assert capsys.readouterr().out.splitlines() == [
            f"Foot Lock: cannot write {unwritable}: {blocker} is a file, not a folder"]
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted([clip.name, blocker.name])


def test_one_clip_written_to_a_folder_name_is_told_the_output_is_a_file(tmp_path, clip, capsys):
    assert cli("remove-sliding", clip, "-o", f"{tmp_path / 'fixed'}{os.sep}") == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.endswith("cannot write fixed: use one of .bvh, .blend, .fbx, .glb, .gltf (the output of one clip "
                         "is a file, not a folder)")


def test_a_failed_read_or_write_names_the_file_and_the_cause():
    """Python's ``[Errno 13] Permission denied: '...'`` told as which file could not be
    read or written, and why; the output's partial file beside it counts as the output."""
    from foot_lock.cli.paths import os_error_line

    source, target = Path("/shots/walk.bvh"), Path("/fixed/walk.bvh")
    partial = Path("/fixed/.foot_lock-partial-0123-walk.bvh")
    assert os_error_line(PermissionError(13, "Permission denied", str(partial)), source, target) == (
        "cannot write /fixed/walk.bvh: Permission denied")
    assert os_error_line(OSError(28, "No space left on device", str(target)), source, target) == (
        "cannot write /fixed/walk.bvh: No space left on device")
    assert os_error_line(PermissionError(13, "Permission denied", str(source)), source, target) == (
        "cannot read /shots/walk.bvh: Permission denied")
    assert os_error_line(OSError(5, "Input/output error", "/tmp/x"), source, target) == "/tmp/x: Input/output error"
    assert os_error_line(OSError("no number"), source, target) == "no number"


def test_an_exporter_s_error_is_told_by_its_cause_and_the_output_s_name():
    """An exception inside an add-on's operator (Blender's FBX or glTF exporter, its BVH
    importer) reaches the command line as the operator's message, which ends with a
    ``Location:`` line: that was the one line told, not the cause. The temporary file the
    exporter wrote to is named as the output it stands for."""
    from foot_lock.cli.clip_files import one_line

    message = ("Error: Python: Traceback (most recent call last):\n"
               '  File "/blender/addons/io_scene_fbx/export_fbx_bin.py", line 3500, in save_single\n'
               "PermissionError: [Errno 13] Permission denied: "
               "'/shots/.foot_lock-partial-2bd2415650d34138998535c5a797cb18-x.fbx'\n"
               "Location: /blender/scripts/modules/bpy/ops.py:109\n")
    assert one_line(message) == "PermissionError: [Errno 13] Permission denied: '/shots/x.fbx'"
    assert one_line("Location: somewhere") == "Location: somewhere"  # nothing else to tell


def test_a_reader_that_leaves_early_does_not_stop_the_batch(tmp_path, walk, pythonpath):
    """``... | head -1``: the reader closes its end after the first line. Printing the next
    raised BrokenPipeError: a traceback, and the report never written. The batch finishes,
    its report written, and the status is the job's."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.bvh", "b.bvh"):
        (folder / name).write_bytes(walk.read_bytes())
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(pythonpath)
    argv = [sys.executable, "-m", "foot_lock", "remove-sliding", folder, "-o", tmp_path / "out", "--jobs", "1",
            "--report", tmp_path / "report.json"]
    with subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout.readline().startswith(b"[1/2] ok ")
        process.stdout.close()  # as head does
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=600) == 0, stderr
    assert "Traceback" not in stderr
    assert len(json.loads((tmp_path / "report.json").read_text())["files"]) == 2
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["a.bvh", "b.bvh"]


def test_names_and_line_endings_are_kept_byte_for_byte(tmp_path, walk):
    text = walk_text(walk).replace("LHipJoint", "LH\udcfcftJoint")  # a Latin-1 byte: not UTF-8
    text = text.replace("\r\n", "\n").replace("\n", "\r\n")  # CRLF throughout, rows too
    source = write_text(tmp_path / "latin1.bvh", text)
    assert cli("remove-sliding", source, "-o", tmp_path / "out.bvh") == 0
    fixed = (tmp_path / "out.bvh").read_bytes()
    assert header_bytes(tmp_path / "out.bvh") == header_bytes(source) and b"LH\xfcftJoint" in fixed
    assert fixed.count(b"\n") == fixed.count(b"\r\n") == source.read_bytes().count(b"\r\n")
    assert bvh.read(tmp_path / "out.bvh").values.shape == (317, 96)
