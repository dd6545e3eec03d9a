"""Hostile inputs for the command-line probes, built from the CMU walk by the tests themselves."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def walk_text(walk):
    """The walk as text, its bytes kept (CRLF and all)."""
    return walk.read_bytes().decode("utf-8", "surrogateescape")


def write_text(path, text):
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


def replace_once(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


def with_rows(text, transform):
    """The file with its MOTION rows (a list of lists of strings) passed through ``transform``."""
    at = text.index("Frame Time:")
    body_at = text.index("\n", at) + 1
    rows = [line.split() for line in text[body_at:].splitlines() if line.strip()]
    return text[:body_at] + "\n".join(" ".join(row) for row in transform(rows)) + "\n"


def set_row_value(rows, frame, column, value):
    rows[frame][column] = value
    return rows


# Corrupt files: (name, how the walk's text is changed, words of the expected message).
CORRUPT = {
    "bad_channel_name": (lambda t: replace_once(t, "Yrotation Xrotation\r\n\t\tJOINT", "Yrotation Wrotation\r\n\t\tJOINT"),
                         "not a channel"),
    "channels_count_too_high": (lambda t: replace_once(t, "CHANNELS 3 Zrotation Yrotation Xrotation\r\n\t\tJOINT",
                                                      "CHANNELS 4 Zrotation Yrotation Xrotation\r\n\t\tJOINT"),
                                "not a channel"),
    "channels_count_not_a_number": (lambda t: replace_once(t, "CHANNELS 3", "CHANNELS three"), "count of 0 to 6"),
    "extra_closing_brace": (lambda t: replace_once(t, "MOTION", "}\r\nMOTION"), "closes nothing"),
    "end_site_before_root": (lambda t: replace_once(t, "HIERARCHY\r\n", "HIERARCHY\r\nEnd Site\r\n{\r\nOFFSET 0 0 0\r\n}\r\n"),
                             "outside a joint"),
    "joint_outside_root": (lambda t: replace_once(t, "ROOT Hips", "JOINT Hips"), "misplaced"),
    "unclosed_brace": (lambda t: replace_once(t, "}\r\nMOTION", "MOTION"), "not closed"),
    "offset_two_numbers": (lambda t: replace_once(t, "OFFSET 0 0 0\r\n", "OFFSET 0 0\r\n"), "three numbers"),
    "duplicate_joint": (lambda t: replace_once(t, "JOINT RightUpLeg", "JOINT LeftUpLeg"), "two joints"),
    "frame_time_1e-300": (lambda t: replace_once(t, "Frame Time: .0083333", "Frame Time: 1e-300"), "frames per second"),
    "frame_time_1e-8": (lambda t: replace_once(t, "Frame Time: .0083333", "Frame Time: 1e-8"), "frames per second"),
    "frame_time_zero": (lambda t: replace_once(t, "Frame Time: .0083333", "Frame Time: 0"), "frames per second"),
    "frame_time_text": (lambda t: replace_once(t, "Frame Time: .0083333", "Frame Time: fast"), "not a number"),
    "frames_fewer_than_rows": (lambda t: replace_once(t, "Frames: 317", "Frames: 10"), "holds 317 rows"),
    "frames_more_than_rows": (lambda t: replace_once(t, "Frames: 317", "Frames: 400"), "holds 317 rows"),
    "row_missing_a_value": (lambda t: with_rows(t, lambda rows: [*rows[:5], rows[5][:-1], *rows[6:]]), "frame 6 holds"),
    "value_not_a_number": (lambda t: with_rows(t, lambda rows: set_row_value(rows, 7, 3, "1.2.3")), "not a number"),
    "value_nan": (lambda t: with_rows(t, lambda rows: set_row_value(rows, 7, 3, "nan")), "not a finite number"),
    "no_motion_section": (lambda t: t[: t.index("MOTION")], "not a BVH file"),
    "empty": (lambda t: "", "the file is empty (0 bytes)"),
    "binary_garbage": (lambda t: bytes(range(256)).decode("latin-1") * 8, "not a BVH file"),
    "no_legs": (lambda t: "HIERARCHY\nROOT Hips\n{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\n"
                          "End Site\n{\nOFFSET 0 1 0\n}\n}\nMOTION\nFrames: 2\nFrame Time: 0.01\n0 0 0\n0 0 1\n",
                "leg"),
}


def zero_length_legs(text):
    """The walk with both thighs' and shins' OFFSETs zero: legs of no length."""
    for offset in ("2.36836 -6.50702 0.00000", "2.53268 -6.95849 0.00000",
                   "-2.44709 -6.72334 0.00000", "-2.43843 -6.69953 0.00000"):
        text = replace_once(text, f"OFFSET {offset}", "OFFSET 0 0 0")
    return text


def small_bvh(frames):
    """A three-joint BVH of ``frames`` frames (no legs): quick to build, slow enough to write."""
    values = np.round(np.random.default_rng(0).normal(size=(frames, 9)), 4)
    rows = "\n".join(" ".join(f"{v:.4f}" for v in row) for row in values)
    return (
        "HIERARCHY\nROOT A\n{\nOFFSET 0 0 0\nCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
        "JOINT B\n{\nOFFSET 0 1 0\nCHANNELS 3 Zrotation Xrotation Yrotation\nEnd Site\n{\nOFFSET 0 1 0\n}\n}\n}\n"
        f"MOTION\nFrames: {frames}\nFrame Time: 0.008333\n{rows}\n"
    )


def processes_mentioning(text):
    """Pids of live processes whose command line contains ``text`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended meanwhile
        if text in command and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def alive(pid):
    """Whether process ``pid`` exists and has not ended (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_cli(argv, cwd, pythonpath, env=None):
    """``python -m foot_lock ARGV`` started, its stdout a pipe read line by line."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(PYTHONPATH=str(pythonpath), **(env or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "foot_lock", *map(str, argv)], cwd=cwd, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def read_until(process, predicate):
    """Lines of ``process``'s stdout up to the first for which ``predicate`` holds (or its end)."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        if predicate(line):
            break
    return lines


def wait_for(condition, limit=120.0, step=0.005):
    """Poll ``condition`` until it returns something true (bounded, so a broken run fails)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(step)
    raise AssertionError("the condition never held")
