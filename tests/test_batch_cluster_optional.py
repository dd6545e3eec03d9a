"""Dask is optional: without it ``--scheduler`` says what to install, and nothing else imports it."""

import sys

from batch_folders import short_walks


def test_without_dask_the_scheduler_flag_says_what_to_install(tmp_path, walk, monkeypatch, capsys):
    from foot_lock.cli import main

    short_walks(walk, tmp_path / "in", ["a.bvh"])
    for name in ("dask", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it fails
    argv = ["remove-sliding", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--scheduler", "local:2"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "--scheduler needs Dask and distributed" in out and "pip install 'dask[distributed]'" in out
    assert not (tmp_path / "out" / "a.bvh").exists()
    assert main(argv[:-2]) == 0  # the local pool imports no Dask (importing it would fail here)
    assert (tmp_path / "out" / "a.bvh").is_file()
