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
from pathlib import Path

from .clip_files import FORMATS
from .errors import ClipError
from .report import FileRecord, file_line, read_record

SCRIPT = Path(__file__).resolve().with_name("blender_script.py")


def clips_in(folder):
    """Every clip under ``folder``, subfolders included, in a stable order."""
    return sorted(path for path in folder.rglob("*") if path.suffix.lower() in FORMATS and path.is_file())


def fix_folder(source, target, jobs, options):
    """Fix every clip of ``source`` into the same place under ``target``; prints a line per file.

    ``options`` are the command-line arguments each worker gets besides its files.
    """
    clips = clips_in(source)
    if not clips:
        raise ClipError(f"no clips ({', '.join(FORMATS)}) in {source}")
    records = []
    with tempfile.TemporaryDirectory(prefix="foot_lock_") as scratch, ThreadPoolExecutor(min(jobs, len(clips))) as pool:
        futures = [
            pool.submit(run_worker, clip, target / clip.relative_to(source), Path(scratch) / f"{i}.json", options)
            for i, clip in enumerate(clips)
        ]
        for done, future in enumerate(as_completed(futures), 1):
            records.append(future.result())
            print(f"[{done}/{len(clips)}] {file_line(records[-1])}", flush=True)
    return sorted(records, key=lambda record: record.input)


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
