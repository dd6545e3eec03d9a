"""What a run did: one record per file, one entry per armature and action fixed in it.

The records are what ``--report`` writes as JSON and what the progress lines, the
summary and the demo's table are printed from.
"""

import json
import math
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..solvers.atomic_files import atomic_output

MANIFEST = Path(__file__).resolve().parents[1] / "blender_manifest.toml"


@dataclass
class FileRecord:
    input: str
    output: str
    ok: bool = False
    error: str | None = None
    seconds: float = 0.0
    clips: list = field(default_factory=list)  # clip_entry() dicts
    input_sha256: str | None = None  # what --resume compares (see resume.py)
    options: list | None = None


def clip_entry(result, leg_names, frame_start, fps, unit_scale, seconds, **identity):
    """One fixed clip: ``identity`` says which (armature, action, ...), then the figures."""
    return {
        **identity,
        "frames": int(result.contacts.shape[1]),
        "frame_start": int(frame_start),
        "fps": float(fps),
        "metres_per_unit": float(unit_scale),
        "contacts": {
            name: {"frames": int(np.sum(foot > 0.5)), "ranges": contact_ranges(foot, frame_start),
                   "toe_ranges": contact_ranges(toe, frame_start), "heel_ranges": contact_ranges(heel, frame_start)}
            for name, foot, toe, heel in zip(leg_names, result.foot_contacts, result.contacts, result.heel_contacts)
        },
        "before": {key: float(value) for key, value in result.before.items()},
        "after": {key: float(value) for key, value in result.after.items()},
        "foot_jitter_mm": float(result.foot_jitter_mm),
        "warnings": list(result.warnings),
        "seconds": float(seconds),
        "solver_seconds": {stage: float(value) for stage, value in result.timings.items()},
    }


def contact_ranges(weights, frame_start):
    """``[[first, last], ...]`` frame numbers (inclusive) where a foot is in contact."""
    inside = np.concatenate(([False], np.asarray(weights) > 0.5, [False]))
    edges = np.flatnonzero(np.diff(inside.astype(int)))
    return [[int(frame_start + a), int(frame_start + b - 1)] for a, b in zip(edges[::2], edges[1::2])]


def foot_lock_version():
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["version"]


def write_report(path, records, settings, stopped=None, unfinished=(), shard=None):
    """The run's JSON report, strict JSON (a figure that is not a number is ``null``),
    written atomically. A stopped run reports the files that finished and lists the rest;
    a shard's (``--shard K/N``) says which it is, so that a merge can tell one is missing."""
    failed = [r.input for r in records if not r.ok]
    summary = {"files": len(records), "fixed": len(records) - len(failed), "failed": failed}
    if stopped:
        summary.update(stopped=stopped, unfinished=list(unfinished))
    document = {
        "foot_lock_version": foot_lock_version(),
        "settings": settings,
        **({"shard": str(shard)} if shard else {}),
        "summary": summary,
        "files": [asdict(record) for record in records],
    }
    text = json.dumps(_finite_or_null(document), indent=2, allow_nan=False) + "\n"
    with atomic_output(path) as temp:
        temp.write_text(text, encoding="utf-8")


def _finite_or_null(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    return value


def read_record(path):
    """The one file record of a worker's report."""
    return FileRecord(**json.loads(path.read_text(encoding="utf-8"))["files"][0])


# --- printed lines ----------------------------------------------------------------------


def file_line(record):
    if not record.ok:
        return f"FAILED {record.input}: {record.error}"
    clips = "; ".join(_clip_summary(clip) for clip in record.clips)
    return f"ok {record.input} -> {record.output} ({record.seconds:.1f} s): {clips}"


def clip_name(clip):
    """``armature / action: `` of a clip entry from Blender, nothing for a BVH's."""
    return f"{clip['armature']} / {clip['action']}: " if clip.get("armature") else ""


def _clip_summary(clip):
    name = clip_name(clip)
    if "kept" in clip:
        return f"{name}{clip['kept']}"
    before, after = clip["before"], clip["after"]
    contacts = sum(leg["frames"] for leg in clip["contacts"].values())
    text = (
        f"{name}{clip['frames']} frames, {contacts} contact frames, "
        f"toe slide {before['toe_slide_cm_s']:.1f} -> {after['toe_slide_cm_s']:.2f} cm/s "
        f"(feet on the ground {before['ground_slide_cm_s']:.1f} -> {after['ground_slide_cm_s']:.1f} cm/s), "
        f"skating {100 * before['skate_ratio']:.1f}% -> {100 * after['skate_ratio']:.1f}%"
    )
    note = f" [note: {clip['note']}]" if "note" in clip else ""
    return text + note + warning_notes(clip["warnings"])


def warning_notes(warnings):
    """The ``warnings`` of a clip as they follow its printed line."""
    return "".join(f" [warning: {warning}]" for warning in warnings)


def summary_line(records, report_path=None):
    failed = [r.input for r in records if not r.ok]
    text = f"Foot Lock: {len(records)} files, {len(records) - len(failed)} fixed, {len(failed)} failed"
    if failed:
        text += " (" + ", ".join(failed) + ")"
    return text + (f"; report: {report_path}" if report_path else "")


def metrics_table(clip):
    """Every figure before and after, one per line."""
    lines = [f"    {'':24} {'before':>10} {'after':>10}"]
    for key, before in clip["before"].items():
        lines.append(f"    {key:24} {before:10.3f} {clip['after'][key]:10.3f}")
    return "\n".join(lines)
