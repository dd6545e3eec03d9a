"""Which Blender saved a .blend, read from its header alone (no bpy needed).

Blender opens a file saved by a newer version only if its format has not changed; a 5.0
file read by 4.2 fails with Blender's own "not a blend file", which sends a user looking
for a damaged file. The header says which version wrote it, so the command line can say
that instead.
"""

import re

# "BLENDER-v402" up to 4.x (pointer size, endianness, three digits); "BLENDER17-01v0500"
# from 5.0 on (header size, format version, four digits).
LEGACY_HEADER = re.compile(rb"BLENDER[_-][vV](\d)(\d\d)")
LARGE_HEADER = re.compile(rb"BLENDER\d\d-\d\d[vV](\d\d)(\d\d)")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # Blender 3.0+ compresses with Zstandard (5.0 by default)
HEADER_BYTES = 17


def saved_by(path):
    """(major, minor) of the Blender that saved ``path``, or None where the header does not
    say (not a .blend, a compressed one without the ``zstandard`` module to read it)."""
    with open(path, "rb") as file:
        head = file.read(HEADER_BYTES)
        if head.startswith(ZSTD_MAGIC):
            head = _decompressed_head(file)
    for header in (LARGE_HEADER, LEGACY_HEADER):
        found = header.match(head or b"")
        if found:
            return int(found[1]), int(found[2])
    return None


def _decompressed_head(file):
    """The first bytes of a Zstandard-compressed file, or None without ``zstandard``
    (bundled with Blender and with the bpy wheel, but not with every Python)."""
    try:
        import zstandard
    except ImportError:
        return None
    file.seek(0)
    try:
        return zstandard.ZstdDecompressor().stream_reader(file).read(HEADER_BYTES)
    except zstandard.ZstdError:
        return None


def newer_than_this(path, running):
    """A message where ``path`` was saved by a Blender newer than ``running`` (bpy.app.version),
    else None."""
    version = saved_by(path)
    if version is None or version <= tuple(running[:2]):
        return None
    saved, this = "{}.{}".format(*version), "{}.{}".format(*running[:2])
    return (f"{path.name} was saved by Blender {saved}, newer than this Blender ({this}), which cannot read it: "
            f"run Foot Lock with Blender {saved} or later (pip install bpy=={saved}.*), or export the clip "
            "from there as FBX, glTF or BVH")
