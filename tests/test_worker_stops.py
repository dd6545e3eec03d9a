"""A worker process ends before :meth:`Workers.run <foot_lock.cli.batch.Workers.run>`
returns, whenever the stop comes: nothing a stopped command line started outlives it.
Workers here are plain Pythons that sleep (no Blender), told apart by a word in their
command line.
"""

import os
import signal
import subprocess
import sys
import threading
from contextlib import suppress

import pytest
from cli_probes import alive, processes_mentioning, wait_for
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
    not handed back yet (under load, a third to a half of the Blender probe's Ctrl-Cs did)."""
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


# The worker forks a child that holds 256 MB and says its pid once it does. Such a fork
# takes a while to tear down, as a fork of Blender would: killed with the worker, it
# was still dying, nearly always, once the worker was reaped.
FORKS_A_BIG_CHILD = """
import os, sys, time
if os.fork() == 0:
    held = bytearray(256 << 20)
    held[::4096] = bytes(len(held) // 4096)
    with open(sys.argv[1] + ".tmp", "w") as ready:
        ready.write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""


def ctrl_c(_workers):
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("stop", [Workers.stop, ctrl_c], ids=["a batch's stop", "a single file's Ctrl-C"])
def test_a_stopped_worker_returns_only_once_what_it_started_has_ended(tmp_path, marker, stop):
    ready = tmp_path / "child_pid"
    workers = Workers()

    def stop_once_the_child_holds_its_memory():
        wait_for(ready.is_file)
        stop(workers)

    stopping = threading.Thread(target=stop_once_the_child_holds_its_memory)
    stopping.start()
    try:
        with suppress(Stopped), stop_on_signals():
            workers.run([sys.executable, "-c", FORKS_A_BIG_CHILD, ready, marker], timeout=60)
    finally:
        stopping.join()
    assert not alive(int(ready.read_text()))
