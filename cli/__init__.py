"""Foot Lock's command line: ``python -m foot_lock`` (bpy wheel) or ``blender -b --python``.

- :mod:`.main`: the commands ``remove-sliding``, ``root-motion`` and ``demo``.
- :mod:`.arguments`: the argument parser (used by :mod:`.main` and :mod:`.demo`).
- :mod:`.settings_flags`: the panel's settings as flags, generated from its PropertyGroup.
- :mod:`.clip_files`: one file in, one out: BVH to BVH through the numpy core
  (:mod:`.bvh_files`), everything else through Blender (:mod:`.blender_files`).
- :mod:`.batch`: worker processes, one per file, bounded by ``--timeout``: a folder, and
  single files that go through Blender.
- :mod:`.paths`: outputs never over an input (written atomically, :mod:`..solvers.atomic_files`).
- :mod:`.stops`: Ctrl-C and SIGTERM, as clean stops.
- :mod:`.farm`: a folder past one machine: ``--shard`` (:mod:`.shards`), ``--resume``
  (:mod:`.resume`), ``--scheduler`` (:mod:`.dask_engine`, Dask imported only then);
  :mod:`.merge_reports` joins the shards' reports.
- :mod:`.report`: what each fix did, as JSON and as printed lines.
- :mod:`.demo`: the bundled walk (``data/``), made to slide and fixed.
- ``blender_script.py``: the script for ``blender -b --python`` (batch workers run it too).

Nothing here imports bpy or Dask at import time: fixing a BVH needs only numpy.
"""

from .main import main, run

__all__ = ["main", "run"]
