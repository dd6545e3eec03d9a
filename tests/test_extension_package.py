"""The extension as users get it: built and validated by Blender's own CLI, installed into
real Blender (the bpy wheel), enabled, disabled and removed again; plus the
register -> unregister smoke test and the check that the solver core needs no bpy."""

import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
PKG_ID = MANIFEST["id"]

# Development files that must never reach the zip (gitignore-style: "x/" is a folder).
NOT_SHIPPED = ("tests/", ".ci/", "benchmarks/", ".git/", ".venv/", "build/", "out/", "pyproject.toml")


def _cli(bpy, *args):
    """Run Blender's extension CLI (the one bundled with this bpy) and return its output."""
    cli = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    assert cli.is_file(), f"Blender's extension CLI is missing: {cli}"
    result = subprocess.run([sys.executable, str(cli), *args], capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"blender_ext.py {' '.join(args)} failed:\n{output}"
    return output


@pytest.fixture(scope="module")
def extension_zip(tmp_path_factory):
    bpy = pytest.importorskip("bpy")
    out = tmp_path_factory.mktemp("extension")  # the CLI does not create --output-dir
    _cli(bpy, "build", "--source-dir", str(ROOT), "--output-dir", str(out))
    path = out / f"{PKG_ID}-{MANIFEST['version']}.zip"
    assert path.is_file(), f"build reported success but wrote no {path.name}"
    return path


def _user_repo(bpy, module="user_default"):
    for index, repo in enumerate(bpy.context.preferences.extensions.repos):
        if repo.module == module:
            return index, repo
    pytest.fail(f"Blender has no {module!r} extension repository")


@pytest.mark.blender
def test_manifest_validates(blender):
    _cli(blender, "validate", str(ROOT))


def test_manifest_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert MANIFEST["version"] == project["version"]
    assert PKG_ID == "foot_lock"
    assert "permissions" not in MANIFEST


@pytest.mark.blender
def test_built_zip_validates_and_ships_only_the_add_on(blender, extension_zip):
    _cli(blender, "validate", str(extension_zip))
    names = zipfile.ZipFile(extension_zip).namelist()
    for required in ("__init__.py", "blender_manifest.toml", "LICENSE", "solvers/__init__.py"):
        assert required in names
    unwanted = [
        name
        for name in names
        if name.startswith(NOT_SHIPPED) or "__pycache__/" in name or name.endswith((".pyc", ".blend1"))
    ]
    assert unwanted == []


@pytest.mark.blender
def test_zip_installs_enables_and_uninstalls(blender, extension_zip):
    bpy = blender
    repo_index, repo = _user_repo(bpy)
    module_name = f"bl_ext.{repo.module}.{PKG_ID}"
    installed_dir = Path(repo.directory) / PKG_ID
    # The session's Blender user folder is a temporary one (see conftest.py).
    assert not installed_dir.exists()

    result = bpy.ops.extensions.package_install_files(
        filepath=str(extension_zip), repo=repo.module, enable_on_install=True
    )
    try:
        assert result == {"FINISHED"}
        assert module_name in bpy.context.preferences.addons
        assert (installed_dir / "__init__.py").is_file()
        assert Path(sys.modules[module_name].__file__).parent == installed_dir

        assert bpy.ops.preferences.addon_disable(module=module_name) == {"FINISHED"}
        assert module_name not in bpy.context.preferences.addons
    finally:
        if installed_dir.exists():
            bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id=PKG_ID)
    assert not installed_dir.exists()
    assert module_name not in bpy.context.preferences.addons


@pytest.mark.blender
def test_register_unregister_twice(blender):
    import foot_lock

    for _ in range(2):
        foot_lock.register()
        foot_lock.unregister()


# A user's script: Foot Lock registered (or enabled as an add-on), a job and Preview run,
# and the script ends with it still registered.
_NEVER_UNREGISTERED = """
import bpy
import addon_utils, foot_lock
{turn_on}
bpy.ops.import_anim.bvh(filepath={clip!r}, global_scale=0.056444, update_scene_fps=True)
assert bpy.ops.foot_lock.remove_sliding() == {{"FINISHED"}}
bpy.context.active_object.foot_lock.preview = True
bpy.context.scene.frame_set(20)
print("the script ended")
"""


@pytest.mark.blender
@pytest.mark.parametrize("turn_on", ["foot_lock.register()", "addon_utils.enable('foot_lock', default_set=True)"])
def test_a_script_that_never_unregisters_exits_cleanly(blender, tmp_path, pythonpath, turn_on):
    """The bpy wheel hung at exit (4.5) or crashed (4.2) after a script that registered Foot
    Lock and never unregistered it; an add-on that Blender disables itself at exit is not
    unregistered twice."""
    script = tmp_path / "script.py"
    script.write_text(_NEVER_UNREGISTERED.format(turn_on=turn_on, clip=str(ROOT / "tests" / "data" / "cmu_07_01.bvh")))
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the script ended" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr


def test_solver_core_imports_without_bpy():
    """Every module of ``foot_lock.solvers`` must import where bpy does not exist."""
    code = textwrap.dedent(
        f"""
        import importlib.util, sys

        class NoBpy:
            def find_spec(self, name, path=None, target=None):
                if name == "bpy" or name.startswith(("bpy.", "bpy_", "mathutils")):
                    raise ImportError("bpy is blocked in this test")

        sys.meta_path.insert(0, NoBpy())
        root = {str(ROOT)!r}
        spec = importlib.util.spec_from_file_location(
            "foot_lock", root + "/__init__.py", submodule_search_locations=[root]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["foot_lock"] = module
        spec.loader.exec_module(module)
        import importlib, pkgutil
        import foot_lock.solvers
        for info in pkgutil.iter_modules(foot_lock.solvers.__path__):
            importlib.import_module("foot_lock.solvers." + info.name)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
