"""The scene's clock as the viewport plays animation: its frame rate and Time Stretching.

Blender evaluates animation (actions, NLA strips) at the scene's current frame and subframe
times ``frame_map_old / frame_map_new`` (Output properties > Time Stretching): mapped
100 -> 200, scene frame 200 shows the action's frame 100, and the clip plays at half its
speed. Foot Lock's frames are the animation's (where its keys are read and written); the
scene is stepped to the frame that shows each, and seconds are counted as it plays them.
"""

import math


def stretch(scene):
    """Animation frames per scene frame (``frame_map_old / frame_map_new``; 1 unmapped)."""
    return scene.render.frame_map_old / scene.render.frame_map_new


def playback_rate(scene):
    """Animation frames per second as the scene plays them: its frame rate, mapped."""
    return scene.render.fps / scene.render.fps_base * stretch(scene)


def show_frame(scene, frame):
    """Step ``scene`` to where it evaluates the animation's ``frame`` (a subframe where the
    mapping puts it between two scene frames)."""
    at = round(frame / stretch(scene), 6)  # an unmapped frame stays whole, a mapped one exact to 1e-6
    whole = math.floor(at)
    scene.frame_set(whole, subframe=at - whole)


def shown_frame(scene):
    """The animation frame the scene shows now (a float where the mapping is not 1:1)."""
    return (scene.frame_current + scene.frame_subframe) * stretch(scene)
