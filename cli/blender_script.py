"""Foot Lock's command line from a script path: for ``blender -b --python``.

    blender -b --factory-startup --python <foot_lock>/cli/blender_script.py -- remove-sliding in.fbx -o out.fbx
    python <foot_lock>/cli/blender_script.py -- remove-sliding in.bvh -o out.bvh

Everything after ``--`` is the command line of ``python -m foot_lock``. The package this
file is in (a clone under any folder name, an installed extension, site-packages) is
imported as ``foot_lock`` from its folder, so it needs no install and no PYTHONPATH.
Batch workers run this file too.
"""

import importlib.util
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def import_package():
    if "foot_lock" in sys.modules:
        return sys.modules["foot_lock"]
    spec = importlib.util.spec_from_file_location(
        "foot_lock", PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["foot_lock"] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)  # `python this_file`: the package's modules are not top-level modules
    import_package()
    from foot_lock.cli import run

    run(sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:])
