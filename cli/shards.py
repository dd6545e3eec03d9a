"""``--shard K/N``: a deterministic 1/N of a folder, so any farm can run N copies of a batch.

A clip belongs to a shard by a hash of its path relative to the folder, not by its place
in a listing: adding or removing files elsewhere in the tree moves no other file to
another shard, so a shard re-run (``--resume``) after the folder grew redoes only what is
new. SHA-1 rather than ``hash()``, which Python salts differently in every process.
"""

import argparse
import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    index: int  # 1 .. count
    count: int

    def __str__(self):
        return f"{self.index}/{self.count}"


def shard_flag(text):
    """The argparse type of ``--shard``: ``K/N`` with 1 <= K <= N."""
    index, slash, count = text.partition("/")
    try:
        shard = Shard(int(index), int(count))
    except ValueError:
        shard = None
    if not slash or shard is None or not 1 <= shard.index <= shard.count:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/3)")
    return shard


def shard_of(relative_path, count):
    """The shard (1 .. ``count``) a file belongs to, from its path relative to the folder."""
    digest = hashlib.sha1(relative_path.as_posix().encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def clips_of_shard(clips, folder, shard):
    """The ``clips`` (paths under ``folder``) that belong to ``shard``; all of them without one."""
    if shard is None:
        return list(clips)
    return [clip for clip in clips if shard_of(clip.relative_to(folder), shard.count) == shard.index]
