"""Foot Lock's solver core: numpy only, importable and testable without Blender."""
