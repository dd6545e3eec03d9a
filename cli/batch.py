"""Files fixed in worker processes: a folder, ``--jobs`` at a time, and single files
that go through Blender.

Each worker is its own Python with its own Blender, running this command line on one
file, so every file starts from an empty session, a file that crashes Blender fails
alone and a file that hangs (a driver that never returns, a stopped process) is killed
after ``--timeout`` seconds. Inside real Blender (whose Python cannot import bpy by
itself) the workers are ``blender -b`` processes instead.

:func:`run_worker` is the unit: one file, one process, one :class:`~.report.FileRecord`;
:class:`Workers` keeps the running ones so that a stop (Ctrl-C, SIGTERM) ends them all.
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import suppress
from functools import partial
from pathlib import Path

from ..solvers.atomic_files import PARTIAL_PREFIX, remove_partial_outputs
from .arguments import WORKER_ONLY
from .clip_files import FORMATS
from .errors import ClipError
from .farm import planned
from .report import FileRecord, file_line, read_record
from .resume import journaling, stamped
from .stops import Stopped, held_signals

SCRIPT = Path(__file__).resolve().with_name("blender_script.py")

# What one worker may need at most, for capping --jobs by free memory: Blender with a
# long clip's arrays, or Python and numpy with a long BVH. (Measured peaks: 0.3 GB for a
# 317-frame .blend to FBX, 0.3 GB for a 994-frame BVH with bpy loaded, 0.06 GB without.)
BLENDER_WORKER_BYTES = 1_500_000_000
BVH_WORKER_BYTES = 500_000_000


def clips_in(folder, outputs=None):
    """Every clip under ``folder``, subfolders included, in a stable order; never a file
    being written (a partial output) nor anything under ``outputs``."""
    skip = Path(os.path.realpath(outputs)) if outputs is not None else None
    return sorted(
        path for path in folder.rglob("*")
        if path.suffix.lower() in FORMATS and path.is_file()
        and not any(part.startswith(PARTIAL_PREFIX) for part in path.parts)
        and (skip is None or skip not in Path(os.path.realpath(path)).parents)
    )


class Workers:
    """The worker processes running now, so that :meth:`stop` can end every one."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = set()
        self.stopped = False

    def run(self, command, timeout, environment=None):
        """Run ``command`` (``environment``: variables to set); returns ``(exit status,
        stderr, timed out)``, or None once stopped."""
        process = None
        try:
            # A stop raised inside Popen, after the fork, would leave a worker no one
            # kills: held, it comes once the worker is known, and ends it below.
            with held_signals():
                process = self._start(command, environment)
            if process is None:
                return None
            _, stderr = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill(process)
            _, stderr = process.communicate()
            timed_out = True
        except BaseException:  # a stop while this thread started or waited for it (a single file's run)
            if process is not None:
                _kill(process)
                process.wait()
            raise
        finally:
            if process is not None:
                self._forget(process)
        return process.returncode, stderr, timed_out

    def _start(self, command, environment):
        """The worker started and registered for :meth:`stop`, or None once stopped."""
        with self._lock:
            if self.stopped:
                return None
            # Its own process group, so a kill reaches anything it started, and a Ctrl-C
            # in the terminal reaches only us: we decide what stops.
            process = subprocess.Popen(dying_with_this_thread(command), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True, errors="replace",
                                       env={**os.environ, **(environment or {})}, start_new_session=True)
            self._running.add(process)
            return process

    def _forget(self, process):
        """Drop the ended ``process`` from the running ones; if it was killed (a timeout,
        a stop: its whole group was), only once what it started has ended too."""
        with self._lock:
            self._running.discard(process)
        if process.returncode == -signal.SIGKILL:
            _wait_for_group_to_end(process.pid)

    def stop(self):
        """No new worker starts; every running one is killed (and waited for by its thread)."""
        with self._lock:
            self.stopped = True
            for process in self._running:
                _kill(process)


# Run as ``python -c DIE_WITH_PARENT command...``: asks Linux to kill the process when the
# thread that started it ends (PR_SET_PDEATHSIG, kept across exec), then becomes ``command``.
# A batch or a Dask worker killed with -9 then takes its Blender with it: the per-file
# timeout, which lived in the dead process, can no longer leave a hung file running forever.
DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL); "  # 1: PR_SET_PDEATHSIG
    "os.getppid() == int(sys.argv[1]) or os._exit(1); "  # the parent was already gone
    "os.execvp(sys.argv[2], sys.argv[2:])"
)


def dying_with_this_thread(command):
    """``command`` made to end with the thread that starts it (Linux; elsewhere as it is).

    The thread, not the process: each worker is started and waited for by one thread of
    the pool (or of a Dask worker), which lives exactly as long as the worker does."""
    if not sys.platform.startswith("linux"):
        return list(command)
    return [sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()), *command]


def _kill(process):
    with suppress(ProcessLookupError):  # it had just ended
        os.killpg(process.pid, signal.SIGKILL)  # works on a SIGSTOPped process too


# How long the rest of a killed worker's process group may take to die before we go on
# without it: far more than ever needed, yet a bound, whatever the system does.
GROUP_END_SECONDS = 5.0


def _wait_for_group_to_end(group):
    """Return once no process of the process ``group`` is alive, or after GROUP_END_SECONDS.

    SIGKILL is asynchronous: once the worker is reaped, a process it started may still be
    dying (Blender's start forks ``xdg-user-dir``, and the fork of a big address space
    takes a while to tear down), and a stopped command line would return before it."""
    deadline = time.monotonic() + GROUP_END_SECONDS
    while _alive_in_group(group) and time.monotonic() < deadline:
        time.sleep(0.005)


def _alive_in_group(group):
    """Whether a process of ``group`` is alive, read from Linux's /proc (elsewhere: False,
    unknown). A zombie has ended: an orphan's waits for PID 1, which may never reap it."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state, _parent, its_group = stat.read().rsplit(b")", 1)[1].split()[:3]
        except OSError:
            continue  # it ended meanwhile
        if int(its_group) == group and state not in (b"Z", b"X"):
            return True
    return False


def run_worker(source, target, options, timeout, workers=None):
    """Fix ``source`` into ``target`` in a worker process (one of ``workers``, if given);
    the worker's record, or one saying why it has none, or None if ``workers`` were
    stopped before this file finished.

    The worker gets a temporary folder of its own, for its record and as its TMPDIR
    (Blender's session files), removed once it ends, even when it was killed.
    """
    with tempfile.TemporaryDirectory(prefix="foot_lock_worker_") as scratch:
        report = Path(scratch) / "record.json"
        argv = ["remove-sliding", str(source), "-o", str(target), "--report", str(report), WORKER_ONLY, *options]
        finished = (workers or Workers()).run(worker_command(argv), timeout, {"TMPDIR": scratch})
        if finished is None:
            return None
        status, stderr, timed_out = finished
        if timed_out or (workers is not None and workers.stopped):
            remove_partial_outputs(target)  # a killed worker cannot clean up after itself
        if report.is_file():
            return read_record(report)
        if workers is not None and workers.stopped:
            return None
        if timed_out:
            return FileRecord(str(source), str(target), error=f"timed out after {timeout:g} s (--timeout)",
                              seconds=timeout)
    last_words = (stderr.strip().splitlines() or ["no message"])[-1]
    return FileRecord(str(source), str(target), error=f"worker died (exit status {status}): {last_words}")


def worker_command(argv):
    blender = sys.modules["bpy"].app.binary_path if "bpy" in sys.modules else ""  # "" under the wheel
    if blender:
        # --disable-autoexec as well as use_scripts=False when the file is opened: no code
        # from the file runs, whatever the machine's preferences say.
        return [blender, "--background", "--factory-startup", "--disable-autoexec", "--python-exit-code", "1",
                "--python", str(SCRIPT), "--", *argv]
    return [sys.executable, str(SCRIPT), "--", *argv]


def fix_folder(source, target, jobs, options, timeout, farm):
    """Fix every clip of ``source`` into the same place under ``target``; prints a line per file.

    ``options`` are the command-line arguments each worker gets besides its files; ``farm``
    holds the command line's shard, resume and scheduler choices (:mod:`.farm`). On
    :class:`~.stops.Stopped` the workers are ended and the exception carries the records
    of the files that finished (``records``) and the inputs that did not (``unfinished``).
    """
    clips = clips_in(source, target)
    if not clips:
        raise ClipError(f"no clips ({', '.join(FORMATS)}) in {source}")
    pairs, done = planned(source, target, clips, farm, options)
    records, late = list(done.values()), []
    results = _records(pairs, jobs, options, timeout, farm.scheduler, late)
    try:
        with journaling(farm.report, farm.resume) as journal:
            for count, record in enumerate(results, 1):
                records.append(record)
                journal(record)
                print(f"[{count}/{len(pairs)}] {file_line(record)}", flush=True)
    except Stopped as stop:
        results.close()  # ends the workers; files that finished while the stop came in are in late
        records += late
        finished = {record.input for record in records}
        stop.records = sorted(records, key=lambda record: record.input)
        stop.unfinished = [str(clip) for clip, _ in pairs if str(clip) not in finished]
        raise
    return sorted(records, key=lambda record: record.input)


def _records(pairs, jobs, options, timeout, scheduler, late):
    """The records of the ``pairs`` fixed, as they finish: on a Dask cluster or the local pool.

    Closing this generator ends the workers; the records of files that finished meanwhile,
    not yielded, go to the list ``late``.
    """
    if not pairs:
        return
    if scheduler:
        from .dask_engine import cluster_records  # Dask is optional: imported when asked for

        yield from cluster_records(scheduler, pairs, options, timeout, late)
    else:
        yield from local_records(pairs, jobs, options, timeout, late)


def local_records(pairs, jobs, options, timeout, late):
    """The records of the ``(source, target)`` pairs fixed by ``jobs`` local worker
    processes, as they finish (see :func:`_records`)."""
    jobs = capped_by_memory(min(jobs, len(pairs)), [clip for clip, _ in pairs])
    workers = Workers()
    with ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(stamped, clip, options, partial(run_worker, clip, output, options, timeout, workers))
                   for clip, output in pairs]
        waiting = set(futures)
        try:
            for future in as_completed(futures):
                waiting.discard(future)
                yield future.result()
        finally:
            workers.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            late += [f.result() for f in waiting if f.done() and not f.cancelled() and f.result() is not None]


def capped_by_memory(jobs, clips):
    """``jobs``, or fewer if the free memory would not hold that many workers (said so)."""
    available = available_memory()
    through_blender = any(clip.suffix.lower() != ".bvh" for clip in clips)
    per_worker = BLENDER_WORKER_BYTES if through_blender else BVH_WORKER_BYTES
    fits = max(1, int(available // per_worker)) if available else jobs
    if fits >= jobs:
        return jobs
    print(f"Foot Lock: {fits} workers instead of {jobs} (--jobs): {available / 1e9:.1f} GB of memory is "
          f"free and a worker may need {per_worker / 1e9:.1f} GB", flush=True)
    return fits


def available_memory():
    """Bytes of memory free for new processes (Linux's MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
