"""A folder of clips: one worker process per file, ``--jobs`` of them at a time.

Each worker is its own Python with its own Blender, running this command line on one
file, so every file starts from an empty session and a file that crashes Blender fails
alone. Inside real Blender (whose Python cannot import bpy by itself) the workers are
``blender -b`` processes instead.
"""

import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import partial
from pathlib import Path

from .clip_files import FORMATS
from .errors import ClipError
from .farm import planned
from .report import FileRecord, file_line, read_record
from .resume import stamped

SCRIPT = Path(__file__).resolve().with_name("blender_script.py")


def clips_in(folder):
    """Every clip under ``folder``, subfolders included, in a stable order."""
    return sorted(path for path in folder.rglob("*") if path.suffix.lower() in FORMATS and path.is_file())


def fix_folder(source, target, jobs, options, farm):
    """Fix every clip of ``source`` into the same place under ``target``; prints a line per file.

    ``options`` are the command-line arguments each worker gets besides its files; ``farm``
    the command line's shard, resume and scheduler choices (:mod:`.farm`).
    """
    clips = clips_in(source)
    if not clips:
        raise ClipError(f"no clips ({', '.join(FORMATS)}) in {source}")
    pairs, done = planned(source, target, clips, farm, options)
    records = list(done.values())
    for count, record in enumerate(_records(pairs, jobs, options, farm.scheduler), 1):
        records.append(record)
        print(f"[{count}/{len(pairs)}] {file_line(record)}", flush=True)
    return sorted(records, key=lambda record: record.input)


def _records(pairs, jobs, options, scheduler):
    """The records of the ``pairs`` fixed, as they finish: on a Dask cluster or the local pool."""
    if not pairs:
        return iter(())
    if scheduler:
        from .dask_engine import cluster_records  # Dask is optional

        return cluster_records(scheduler, pairs, options)
    return local_records(pairs, jobs, options)


def local_records(pairs, jobs, options):
    """The records of the ``(source, target)`` pairs fixed by ``jobs`` local worker processes."""
    with tempfile.TemporaryDirectory(prefix="foot_lock_") as scratch, ThreadPoolExecutor(min(jobs, len(pairs))) as pool:
        futures = [
            pool.submit(stamped, clip, options, partial(run_worker, clip, output, Path(scratch) / f"{i}.json", options))
            for i, (clip, output) in enumerate(pairs)
        ]
        for future in as_completed(futures):
            yield future.result()


def run_worker(source, target, report, options):
    argv = ["remove-sliding", str(source), "-o", str(target), "--report", str(report), *options]
    finished = subprocess.run(worker_command(argv), capture_output=True, text=True, check=False)
    if report.is_file():
        return read_record(report)
    last_words = (finished.stderr.strip().splitlines() or ["no message"])[-1]
    return FileRecord(str(source), str(target), error=f"worker died (exit status {finished.returncode}): {last_words}")


def worker_command(argv):
    blender = sys.modules["bpy"].app.binary_path if "bpy" in sys.modules else ""  # "" under the wheel
    if blender:
        return [blender, "--background", "--factory-startup", "--python-exit-code", "1",
                "--python", str(SCRIPT), "--", *argv]
    return [sys.executable, str(SCRIPT), "--", *argv]
