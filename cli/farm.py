"""A folder batch past one machine: its flags, and which of its files this run fixes where.

- ``--shard K/N`` keeps the files of one shard (:mod:`.shards`), for N copies on any farm;
- ``--resume`` leaves out the files the report says are fixed already (:mod:`.resume`);
- ``--scheduler`` fixes the rest on a Dask cluster (:mod:`.dask_engine`) instead of the
  local pool of ``--jobs`` processes.
"""

import argparse

from .resume import already_fixed
from .shards import clips_of_shard, shard_flag

FOLDER_ONLY = ("shard", "resume", "scheduler")
INSTALL = "pip install 'dask[distributed]'"
LOCAL_PREFIX = "local:"


def add_farm_flags(parser):
    farm = parser.add_argument_group("a folder on a farm or a cluster")
    farm.add_argument("--shard", type=shard_flag, metavar="K/N",
                      help="fix only the K-th of N shards of the folder (1 <= K <= N), chosen by a hash of "
                      "each file's path under it: run N copies anywhere, then merge-reports")
    farm.add_argument("--resume", action="store_true",
                      help="skip the files --report says are fixed with the same settings, from the same "
                      "input (SHA-256), into an output that exists; the report keeps their entries")
    farm.add_argument("--scheduler", type=scheduler_flag, metavar="ADDRESS",
                      help="run one task per file on the Dask cluster at ADDRESS (tcp://host:8786), or on "
                      f"local:N, a Dask cluster of N workers started here (needs {INSTALL}); "
                      "instead of --jobs")


def scheduler_flag(text):
    """The argparse type of ``--scheduler``: ``local:N`` or a scheduler's address."""
    if text.startswith(LOCAL_PREFIX):
        count = text[len(LOCAL_PREFIX):]
        if not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: local:N needs a number of workers N >= 1")
    elif "://" not in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not local:N nor an address like tcp://host:8786")
    return text


def farm_misuse(args):
    """Why the farm flags of ``args`` cannot be used, or None."""
    given = [f"--{name}" for name in FOLDER_ONLY if getattr(args, name)]
    if given and not args.input.is_dir():
        return f"{', '.join(given)}: only for a folder of clips"
    if args.resume and not args.report:
        return "--resume needs --report: the report of the run to resume (it is written again)"
    return None


def planned(source, target, clips, args, options):
    """``(to fix, already fixed)``: the ``(source, target)`` pairs this run fixes, and the
    records (by input) of those ``--resume`` leaves out."""
    clips = clips_of_shard(clips, source, args.shard)
    pairs = [(clip, target / clip.relative_to(source)) for clip in clips]
    done = already_fixed(args.report, pairs, options) if args.resume else {}
    if done:
        print(f"Foot Lock: {len(done)} of {len(pairs)} files already fixed ({args.report}); "
              f"fixing the other {len(pairs) - len(done)}", flush=True)
    return [pair for pair in pairs if pair[0] not in done], done
