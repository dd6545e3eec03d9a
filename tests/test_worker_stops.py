"""A worker process ends before :meth:`Workers.run <foot_lock.cli.batch.Workers.run>`
returns, whenever the stop comes: nothing a stopped command line started outlives it.
Workers here are plain Pythons that sleep (no Blender), told apart by a word in their
command line.
"""

import os
import signal
import subprocess
import sys

import pytest
from cli_probes import alive, processes_mentioning
from foot_lock.cli.batch import Workers
from foot_lock.cli.stops import Stopped, stop_on_signals


@pytest.fixture
def marker(tmp_path):
    """A word only this test's workers have in their command line; any left are killed."""
    word = str(tmp_path / "sleeping_worker")
    yield word
    for pid in processes_mentioning(word):
        os.kill(pid, signal.SIGKILL)


def sleeper(marker):
    return [sys.executable, "-c", "import time; time.sleep(60)", marker]


def test_a_ctrl_c_while_a_worker_starts_ends_that_worker(marker, monkeypatch):
    """The signal lands inside Popen, after the fork: the worker exists but its Popen was
    not handed back yet (under load, one Ctrl-C in three of the Blender probe did)."""
    start, started = subprocess.Popen, []

    def started_then_ctrl_c(*args, **kwargs):
        process = start(*args, **kwargs)
        started.append(process.pid)
        signal.raise_signal(signal.SIGINT)
        return process

    monkeypatch.setattr(subprocess, "Popen", started_then_ctrl_c)
    with pytest.raises(Stopped), stop_on_signals():
        Workers().run(sleeper(marker), timeout=60)
    assert [pid for pid in started if alive(pid)] == []
