"""``--resume``: a batch started again fixes only what its report does not show as done."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys

import pytest
from batch_folders import read_report, short_walk, short_walks
from cli_helpers import package_parent, run_python
from cli_probes import wait_for

NAMES = ["a.bvh", "b.bvh", "sub/c.bvh", "sub/d.bvh"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, walk):
    root = tmp_path_factory.mktemp("resume")
    source, out = root / "in", root / "out"
    short_walks(walk, source, NAMES)
    (source / "broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n")
    pythonpath = package_parent(root / "pythonpath")

    def remove_sliding(*extra):
        return run_python(["-m", "foot_lock", "remove-sliding", source, "-o", out, "--jobs", "2",
                           "--report", root / "report.json", *extra], cwd=root, pythonpath=pythonpath)

    result = remove_sliding()
    assert result.returncode == 1, result.stdout + result.stderr
    return root, source, out, remove_sliding


def test_the_report_holds_each_input_hash_and_options(first_run):
    root, source, _, _ = first_run
    entries = {entry["input"]: entry for entry in read_report(root / "report.json")["files"]}
    for name in [*NAMES, "broken.bvh"]:
        entry = entries[str(source / name)]
        assert entry["input_sha256"] == hashlib.sha256((source / name).read_bytes()).hexdigest()
        assert entry["options"] == []  # no flag given: the workers' options


def test_resume_fixes_only_the_failed_changed_and_missing(first_run, walk):
    root, source, out, remove_sliding = first_run
    before = read_report(root / "report.json")
    stamps = {name: (out / name).stat().st_mtime_ns for name in NAMES}
    short_walk(walk, source / "b.bvh", first_frame=100, frames=60, root_scale=1.3)  # a new take
    (out / "sub" / "c.bvh").unlink()

    result = remove_sliding("--resume")
    assert result.returncode == 1, result.stdout + result.stderr  # broken.bvh is still broken
    assert "Foot Lock: 2 of 5 files already fixed" in result.stdout
    redone = re.findall(r"^\[\d/3\] (?:ok|FAILED) (\S+?):? ", result.stdout, re.M)
    assert sorted(redone) == sorted(str(source / name) for name in ("b.bvh", "sub/c.bvh", "broken.bvh"))
    assert {name: (out / name).stat().st_mtime_ns == stamps[name] for name in ("a.bvh", "sub/d.bvh")} == {
        "a.bvh": True, "sub/d.bvh": True}
    after = read_report(root / "report.json")
    assert after["summary"] == before["summary"]  # every file is in the report again
    old, new = ({entry["input"]: entry for entry in report["files"]} for report in (before, after))
    assert new[str(source / "a.bvh")] == old[str(source / "a.bvh")]  # kept as it was, timings too
    assert new[str(source / "b.bvh")]["input_sha256"] != old[str(source / "b.bvh")]["input_sha256"]
    assert (out / "sub" / "c.bvh").is_file()


def test_other_settings_fix_everything_again(first_run):
    root, _, _, remove_sliding = first_run
    result = remove_sliding("--resume", "--bvh-unit-scale", "0.05")
    assert "already fixed" not in result.stdout
    assert len(re.findall(r"^\[\d/5\] ", result.stdout, re.M)) == 5
    entries = read_report(root / "report.json")["files"]
    assert all(entry["options"] == ["--bvh-unit-scale", "0.05"] for entry in entries)


def test_resume_needs_a_report_and_a_folder(first_run, capsys):
    from foot_lock.cli import main

    root, source, out, _ = first_run
    assert main(["remove-sliding", str(source), "-o", str(out), "--resume"]) == 2
    assert "--resume needs --report" in capsys.readouterr().out
    assert main(["remove-sliding", str(source / "a.bvh"), "-o", str(root / "x.bvh"), "--shard", "1/2"]) == 2
    assert "--shard: only for a folder" in capsys.readouterr().out


def test_a_gltf_is_hashed_and_found_whole_with_the_files_it_refers_to(tmp_path):
    """A re-export can leave a .gltf's JSON byte for byte as it was and change its buffer
    alone: --resume took the old fix for the new input. Nor is an output whose buffer is
    gone still a fix. The hash covers the .gltf's buffers and images, and an output is
    whole only with them."""
    from foot_lock.cli.resume import _output_whole, input_sha256

    gltf = tmp_path / "walk.gltf"
    gltf.write_text(json.dumps({"asset": {"version": "2.0"}, "buffers": [{"uri": "walk%20keys.bin"}],
                                "images": [{"uri": "data:image/png;base64,AAAA"}]}))
    buffer = tmp_path / "walk keys.bin"
    buffer.write_bytes(b"keys")
    before = input_sha256(gltf)
    buffer.write_bytes(b"other keys")
    assert input_sha256(gltf) not in {before, None}
    assert _output_whole(gltf)
    buffer.unlink()
    assert not _output_whole(gltf) and input_sha256(gltf) is None


def test_a_batch_killed_before_its_report_resumes_from_its_journal(tmp_path, walk):
    """SIGKILL (an out-of-memory kill, a reclaimed spot node, a scheduler's grace period
    over) leaves no report; each file that finished is in the report's journal, and
    ``--resume`` skips those. Without the journal a batch of 33 files killed with 21 done
    fixed all 33 again."""
    source, out, report = tmp_path / "in", tmp_path / "out", tmp_path / "report.json"
    names = [f"take_{i}.bvh" for i in range(5)]
    short_walks(walk, source, names)
    argv = ["-m", "foot_lock", "remove-sliding", source, "-o", out, "--jobs", "1", "--report", report]
    pythonpath = package_parent(tmp_path / "pythonpath")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    batch = subprocess.Popen([sys.executable, *map(str, argv)], cwd=tmp_path, env={**env, "PYTHONPATH": str(pythonpath)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    journal = tmp_path / "report.json.journal"
    wait_for(lambda: journal.is_file() and journal.read_text().count("\n") >= 2)
    os.killpg(batch.pid, signal.SIGKILL)  # the batch and its workers, as the kernel's OOM killer or a node's end
    batch.wait()
    assert not report.exists()
    done = [json.loads(line)["input"] for line in journal.read_text().splitlines()]
    assert len(done) < len(names)

    result = run_python([*argv, "--resume"], cwd=tmp_path, pythonpath=pythonpath)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Foot Lock: {len(done)} of {len(names)} files already fixed" in result.stdout
    assert sorted(entry["input"] for entry in read_report(report)["files"]) == sorted(str(source / n) for n in names)
    assert not journal.exists()  # the report is written: the journal has done its work


def test_a_report_that_cannot_be_written_is_told_before_the_work(tmp_path, walk, capsys):
    """The report's journal is opened before the first file: a folder run whose report cannot
    be written beside it (here a folder stands in the journal's way; a read-only folder does
    the same to a user who is not root) says so at once, instead of fixing every file and
    then failing to record them."""
    from foot_lock.cli import main

    source, out, report = tmp_path / "in", tmp_path / "out", tmp_path / "report.json"
    short_walks(walk, source, ["a.bvh", "b.bvh"])
    (tmp_path / "report.json.journal").mkdir()
    assert main(["remove-sliding", str(source), "-o", str(out), "--report", str(report)]) == 1
    assert f"cannot write the report {report} (its journal report.json.journal: " in capsys.readouterr().out
    assert not out.exists()
