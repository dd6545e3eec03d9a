"""Shared test setup.

- Makes the repository importable as ``foot_lock`` whatever the clone's folder is called.
- Points Blender's user resources at a temporary folder before bpy is imported, so tests
  never read or write the machine's real Blender configuration.
- ``clips_dir``: where the motion-capture clips live (``tests/data``, or FOOT_LOCK_CLIPS).
- Tests marked ``blender`` (or using the ``blender`` fixture) start from Blender's
  factory settings with an empty scene, and are skipped when the bpy wheel is missing.
"""

import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "foot_lock"


def _same_file(a, b):
    try:
        return a is not None and Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _import_repo_as_package():
    """Import the repository root as ``foot_lock``, shadowing any other installed copy."""
    init = ROOT / "__init__.py"
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        if _same_file(getattr(loaded, "__file__", None), init):
            return loaded
        raise RuntimeError(
            f"{PACKAGE} was imported from {loaded.__file__} before the tests started; "
            f"the tests must run against {ROOT}"
        )
    found = importlib.util.find_spec(PACKAGE)
    if found is not None and _same_file(found.origin, init):
        # An editable install (or a clone named foot_lock on sys.path): already this tree.
        return importlib.import_module(PACKAGE)
    spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[str(ROOT)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return module


def _isolate_blender_user_resources():
    """Use a throw-away Blender user folder (config, scripts, extensions) for this session.

    Blender reads BLENDER_USER_RESOURCES once, when bpy is first imported, so this has to
    happen here, before any test module imports bpy. A value set by the caller is kept.
    Returns the folder to delete at the end of the session, or None.
    """
    if os.environ.get("BLENDER_USER_RESOURCES"):
        return None
    if "bpy" in sys.modules:
        raise RuntimeError("bpy was imported before conftest.py could isolate Blender's user folder")
    folder = tempfile.mkdtemp(prefix="foot_lock_blender_user_")
    os.environ["BLENDER_USER_RESOURCES"] = folder
    return folder


_import_repo_as_package()
_TEMP_USER_RESOURCES = _isolate_blender_user_resources()


def pytest_unconfigure(config):
    if _TEMP_USER_RESOURCES is not None:
        shutil.rmtree(_TEMP_USER_RESOURCES, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    # A test that asks for the `blender` fixture is a Blender test, so `-m "not blender"` drops it.
    for item in items:
        if "blender" in getattr(item, "fixturenames", ()) and item.get_closest_marker("blender") is None:
            item.add_marker(pytest.mark.blender)


@pytest.fixture(scope="session")
def clips_dir():
    """Folder of the mocap clips (*.bvh): see ``clip_scenarios.find_clips_dir``."""
    from clip_scenarios import find_clips_dir

    path = find_clips_dir()
    if not path.is_dir():
        pytest.fail(f"no clips folder at {path} (FOOT_LOCK_CLIPS={os.environ.get('FOOT_LOCK_CLIPS')!r})")
    return path


@pytest.fixture
def blender():
    """The bpy module, reset to factory settings with an empty scene."""
    bpy = pytest.importorskip("bpy")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy


@pytest.fixture
def addon(blender):
    """bpy with Foot Lock registered, and unregistered again (Blender 4.2 crashes at exit otherwise)."""
    import foot_lock

    foot_lock.register()
    yield blender
    foot_lock.unregister()


@pytest.fixture(autouse=True)
def _blender_factory_startup(request):
    """Every test marked ``blender`` starts from factory settings (and skips without bpy)."""
    if request.node.get_closest_marker("blender") is not None:
        request.getfixturevalue("blender")


@pytest.fixture(scope="module")
def walk(clips_dir):
    """The CMU walk used by the command-line tests."""
    return clips_dir / "cmu_07_01.bvh"


@pytest.fixture(scope="module")
def sliding(tmp_path_factory, walk):
    """The walk with its root motion x1.25: the clips README's sliding scenario."""
    from foot_lock.solvers import bvh

    return bvh.write_sliding_copy(walk, tmp_path_factory.mktemp("clips") / "walk_sliding.bvh", 1.25)


@pytest.fixture(scope="module")
def pythonpath(tmp_path_factory):
    """A folder to put on PYTHONPATH so that ``python -m foot_lock`` runs this repository."""
    from cli_helpers import package_parent

    return package_parent(tmp_path_factory.mktemp("pythonpath"))
