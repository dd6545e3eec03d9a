"""``--shard K/N`` and ``merge-reports``: N copies of a batch on any farm, their reports as one."""

import argparse
import json
import re
import shutil
from pathlib import PurePosixPath

import pytest
from batch_folders import read_report, relative_outputs, short_walks, without_timings
from cli_helpers import package_parent, run_python
from foot_lock.cli.shards import Shard, clips_of_shard, shard_flag, shard_of

NAMES = ["a.bvh", "b.bvh", "c.bvh", "sub/d.bvh", "sub/e.bvh", "sub/deeper/f.bvh", "g.bvh", "h.bvh"]


def test_shard_of_a_path_depends_on_that_path_only():
    paths = [PurePosixPath(f"shot_{i:03d}/take_{i % 7}.bvh") for i in range(300)]
    before = {path: shard_of(path, 3) for path in paths}
    grown = [PurePosixPath(f"new/{i}.bvh") for i in range(100)] + paths
    assert {path: shard_of(path, 3) for path in grown if path in before} == before
    counts = [list(before.values()).count(k) for k in (1, 2, 3)]
    assert min(counts) > 70, counts  # about a third each (100 expected)


def test_the_shards_of_a_folder_are_disjoint_and_cover_it(tmp_path):
    clips = [tmp_path / f"s{i}" / f"c{i}.bvh" for i in range(40)]
    shards = [set(clips_of_shard(clips, tmp_path, Shard(k, 4))) for k in (1, 2, 3, 4)]
    assert sum(len(shard) for shard in shards) == len(clips) and set().union(*shards) == set(clips)
    assert clips_of_shard(clips, tmp_path, None) == clips


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/3", "1/3/3"])
def test_a_shard_is_k_of_n(text):
    with pytest.raises(argparse.ArgumentTypeError):
        shard_flag(text)


def test_shard_flag_reads_k_of_n():
    assert shard_flag("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"


# --- a folder in three shards -----------------------------------------------------------


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, walk):
    """A folder run whole, then as three shards into the same output folder, then merged."""
    root = tmp_path_factory.mktemp("sharded")
    source, out = root / "in", root / "out"
    short_walks(walk, source, NAMES)
    (source / "sub" / "broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n")
    pythonpath = package_parent(root / "pythonpath")

    def remove_sliding(*extra):
        return run_python(["-m", "foot_lock", "remove-sliding", source, "-o", out, "--jobs", "2", *extra],
                          cwd=root, pythonpath=pythonpath)

    whole = remove_sliding("--report", root / "whole.json")
    assert whole.returncode == 1, whole.stdout + whole.stderr  # the broken file
    whole_outputs = {path: (out / path).read_bytes() for path in relative_outputs(out)}
    shutil.rmtree(out)
    shards = [remove_sliding("--shard", f"{k}/3", "--report", root / f"shard{k}.json") for k in (1, 2, 3)]
    merged = run_python(["-m", "foot_lock", "merge-reports", *(root / f"shard{k}.json" for k in (1, 2, 3)),
                         "-o", root / "all.json"], cwd=root, pythonpath=pythonpath)
    return {"root": root, "source": source, "out": out, "whole": whole, "whole_outputs": whole_outputs,
            "shards": shards, "merged": merged}


def test_three_shards_fix_every_file_exactly_once(sharded):
    reports = [read_report(sharded["root"] / f"shard{k}.json") for k in (1, 2, 3)]
    inputs = [entry["input"] for report in reports for entry in report["files"]]
    expected = sorted(str(sharded["source"] / name) for name in [*NAMES, "sub/broken.bvh"])
    assert sorted(inputs) == expected  # each once: no file in two shards, none left out
    assert all(report["files"] for report in reports)  # and each shard had work
    for result in sharded["shards"]:
        assert result.returncode in (0, 1), result.stdout + result.stderr
        progress = re.findall(r"^\[(\d+)/(\d+)\] ", result.stdout, re.M)
        assert len(progress) == int(progress[0][1])  # a line per file of its shard


def test_the_merged_report_is_the_unsharded_one(sharded):
    merged, whole = (read_report(sharded["root"] / name) for name in ("all.json", "whole.json"))
    assert without_timings(merged) == without_timings(whole)
    assert merged["summary"] == {"files": 9, "fixed": 8, "failed": [str(sharded["source"] / "sub" / "broken.bvh")]}
    assert all(entry["clips"][0]["after"]["toe_slide_cm_s"] < 1.0 for entry in merged["files"] if entry["ok"])
    assert sharded["merged"].returncode == 1  # one file failed in the batch
    assert sharded["merged"].stdout.startswith("Foot Lock: 9 files, 8 fixed, 1 failed")


def test_the_shards_write_the_unsharded_outputs(sharded):
    out = sharded["out"]
    assert {path: (out / path).read_bytes() for path in relative_outputs(out)} == sharded["whole_outputs"]


def test_reports_of_other_settings_sharing_a_file_or_not_reports_are_not_merged(sharded, tmp_path, capsys):
    from foot_lock.cli import main

    shard1 = read_report(sharded["root"] / "shard1.json")
    other = dict(shard1, settings={**shard1["settings"], "speed_threshold": 0.5})
    (tmp_path / "other.json").write_text(json.dumps(other))
    argv = ["merge-reports", str(sharded["root"] / "shard1.json"), str(tmp_path / "other.json"),
            "-o", str(tmp_path / "all.json")]
    assert main(argv) == 2
    assert "other settings than" in capsys.readouterr().out
    (tmp_path / "same.json").write_text(json.dumps(shard1))
    assert main(argv[:2] + [str(tmp_path / "same.json")] + argv[3:]) == 2
    assert "is in both" in capsys.readouterr().out
    (tmp_path / "notes.json").write_text('{"files": [], "settings": {}}')
    assert main(argv[:2] + [str(tmp_path / "notes.json")] + argv[3:]) == 2
    assert "notes.json is not a Foot Lock report" in capsys.readouterr().out
    assert not (tmp_path / "all.json").exists()


def test_a_stopped_shard_makes_the_merged_report_a_stopped_one(sharded, tmp_path, capsys):
    from foot_lock.cli import main

    shard2 = read_report(sharded["root"] / "shard2.json")
    unfinished = shard2["files"].pop()["input"]
    shard2["summary"].update(stopped="stopped by SIGTERM", unfinished=[unfinished])
    (tmp_path / "shard2.json").write_text(json.dumps(shard2))
    reports = [sharded["root"] / "shard1.json", tmp_path / "shard2.json", sharded["root"] / "shard3.json"]
    assert main(["merge-reports", *map(str, reports), "-o", str(tmp_path / "all.json")]) == 1
    assert f"unfinished files: 1 ({tmp_path / 'shard2.json'} stopped by SIGTERM)" in capsys.readouterr().out
    summary = read_report(tmp_path / "all.json")["summary"]
    assert summary["unfinished"] == [unfinished] and summary["files"] == 8


def test_the_shards_of_a_batch_are_merged_only_all_of_them(sharded, tmp_path, capsys):
    """Each shard's report says which it is: a batch merged without the report of a shard
    that died before writing it (or with one shard's twice) is refused, naming it, instead
    of passing for a batch that is done."""
    from foot_lock.cli import main

    reports = [sharded["root"] / f"shard{k}.json" for k in (1, 2, 3)]
    assert [read_report(path)["shard"] for path in reports] == ["1/3", "2/3", "3/3"]
    assert main(["merge-reports", *map(str, reports[:2]), "-o", str(tmp_path / "all.json")]) == 2
    assert "no report of shard 3 of 3" in capsys.readouterr().out
    assert main(["merge-reports", str(reports[0]), "-o", str(tmp_path / "all.json")]) == 2
    assert "no report of shard 2, 3 of 3" in capsys.readouterr().out
    empty = dict(read_report(reports[1]), files=[])  # the same shard again, with its files elsewhere
    (tmp_path / "again.json").write_text(json.dumps(empty))
    assert main(["merge-reports", *map(str, reports), str(tmp_path / "again.json"), "-o", str(tmp_path / "all.json")]) == 2
    assert "shard 2/3 twice" in capsys.readouterr().out
    whole = sharded["root"] / "whole.json"
    assert main(["merge-reports", *map(str, reports), str(whole), "-o", str(tmp_path / "all.json")]) == 2
    assert not (tmp_path / "all.json").exists()


def test_the_merged_report_is_never_written_over_a_shard_s(sharded, capsys):
    """``-o`` naming one of the shards' reports (by another spelling too) is refused before
    anything is written: that shard's record would be lost and the batch not merged again."""
    from foot_lock.cli import main

    reports = [sharded["root"] / f"shard{k}.json" for k in (1, 2, 3)]
    before = reports[0].read_bytes()
    spelled = sharded["root"] / "sub" / ".." / "shard1.json"
    assert main(["merge-reports", *map(str, reports), "-o", str(spelled)]) == 2
    assert f"the output {spelled} is the report {reports[0]}" in capsys.readouterr().out
    assert reports[0].read_bytes() == before
