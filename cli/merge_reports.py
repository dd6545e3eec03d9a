"""``merge-reports A.json B.json ... -o all.json``: the reports of a batch's shards as one.

The merged report is the one an unsharded run would have written (files in the same
order, the same summary). A shard that was stopped (Ctrl-C, SIGTERM) makes the merged
report a stopped one too, listing every file that did not finish. Reports of different settings or Foot Lock versions, or that
share a file, are not shards of one batch: they are refused rather than mixed; so are the
shards' reports of a batch where one is missing or given twice (each says which it is).
"""

import json
from pathlib import Path

from .paths import same_file
from .report import FileRecord, summary_line, write_report
from .shards import shard_flag

EXIT_REFUSED = 2


def add_merge_reports(commands):
    parser = commands.add_parser(
        "merge-reports", help="join the --report files of a batch's shards into one",
        description="Join the reports of the shards of one batch (--shard K/N) into the report an "
        "unsharded run would have written. Exit status: 0 when every file was fixed, 1 when any "
        "failed, 2 when the reports cannot be merged.",
    )
    parser.add_argument("reports", type=Path, nargs="+", metavar="REPORT", help="the shards' JSON reports")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="JSON", help="the merged report")
    return parser


def merge_reports(args):
    try:
        _refuse_writing_a_shard(args.reports, args.output)
        records, settings, stop = merged(args.reports)
    except MergeError as error:
        print(f"Foot Lock: cannot merge the reports: {error}")
        return EXIT_REFUSED
    write_report(args.output, records, settings, **stop)
    if stop:
        print(f"Foot Lock: unfinished files: {len(stop['unfinished'])} ({stop['stopped']})")
    print(summary_line(records, args.output), flush=True)
    return 0 if all(record.ok for record in records) and not stop else 1


class MergeError(Exception):
    """The reports are not the shards of one batch (or not reports)."""


def _refuse_writing_a_shard(paths, output):
    """Raise :class:`MergeError` where ``output`` is one of the shards' reports: written over,
    that shard's record would be lost and the batch could not be merged again."""
    shard = next((path for path in paths if same_file(path, output)), None)
    if shard is not None:
        raise MergeError(f"the output {output} is the report {shard}: write the merged report elsewhere")


def merged(paths):
    """All records of the reports at ``paths``, by input, their common settings, and the
    ``stopped`` and ``unfinished`` summary of the stopped ones (empty if none was)."""
    documents = [_read(path) for path in paths]
    for key in ("foot_lock_version", "settings"):
        differing = [str(path) for path, document in zip(paths, documents) if document[key] != documents[0][key]]
        if differing:
            raise MergeError(f"{', '.join(differing)}: other {key.replace('_', ' ')} than {paths[0]}")
    records, origin = [], {}
    for path, document in zip(paths, documents):
        for record in document["files"]:
            if record.input in origin:
                raise MergeError(f"{record.input} is in both {origin[record.input]} and {path}")
            origin[record.input] = path
            records.append(record)
    _check_shards(paths, documents)
    stopped = [(path, document["summary"]) for path, document in zip(paths, documents)
               if document["summary"].get("stopped")]
    stop = {"stopped": "; ".join(f"{path} {summary['stopped']}" for path, summary in stopped),
            "unfinished": sorted(name for _, summary in stopped for name in summary["unfinished"])}
    return sorted(records, key=lambda record: record.input), documents[0]["settings"], stop if stopped else {}


def _check_shards(paths, documents):
    """Raise :class:`MergeError` unless the reports are of every shard of one batch, each
    once, or of no shard at all: merged without one, a batch would pass for done."""
    shards = [document["shard"] for document in documents]
    if not any(shards):
        return
    if not all(shards):
        unsharded = [str(path) for path, shard in zip(paths, shards) if not shard]
        raise MergeError(f"{', '.join(unsharded)}: not a shard's report, beside shards' reports")
    parsed = [shard_flag(shard) for shard in shards]
    count = parsed[0].count
    if any(shard.count != count for shard in parsed):
        raise MergeError(f"shards of different batches: {', '.join(sorted(set(shards)))}")
    seen = [shard.index for shard in parsed]
    twice = sorted({index for index in seen if seen.count(index) > 1})
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if twice or missing:
        told = [f"shard {index}/{count} twice" for index in twice]
        told += [f"no report of shard {', '.join(map(str, missing))} of {count}"] if missing else []
        raise MergeError("; ".join(told) + " (a shard that stopped before its report was written: run it again)")


def _read(path):
    """A report, its files as records."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        version, settings, entries = document["foot_lock_version"], document["settings"], document["files"]
        return {"foot_lock_version": version, "settings": settings, "shard": document.get("shard"),
                "summary": document["summary"], "files": [FileRecord(**entry) for entry in entries]}
    except OSError as error:
        raise MergeError(f"cannot read {path}: {error.strerror or error}") from error
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise MergeError(f"{path} is not a Foot Lock report ({error!r})") from error
