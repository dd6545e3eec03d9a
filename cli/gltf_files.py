"""glTF files read without Blender: their JSON, and the files a .gltf refers to (its
buffers and images), which belong to it as much as the .gltf does: an output never
replaces them, and ``--resume`` hashes them with it."""

import json
from urllib.parse import unquote

from .errors import ClipError


def gltf_document(path):
    """The JSON document of a .gltf or .glb file (:class:`ClipError` if it has none)."""
    data = path.read_bytes()
    try:
        if data[:4] == b"glTF":  # binary: a 12-byte header, then the JSON chunk's length, type and text
            length = int.from_bytes(data[12:16], "little")
            document = json.loads(data[20 : 20 + length])
        else:
            document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ClipError(f"{path.name} is not a glTF file: its JSON cannot be read") from None
    if not isinstance(document, dict):
        raise ClipError(f"{path.name} is not a glTF file: its JSON is not an object")
    return document


def input_files(source):
    """The file ``source`` and, for a .gltf, the files it refers to (buffers, images)."""
    if source.suffix.lower() != ".gltf":
        return [source]
    document = gltf_document(source)
    entries = [*document.get("buffers", []), *document.get("images", [])]
    uris = [entry.get("uri") for entry in entries if isinstance(entry, dict)]
    return [source, *(source.parent / unquote(uri) for uri in uris if isinstance(uri, str) and not uri.startswith("data:"))]
