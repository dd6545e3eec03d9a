"""Reruns follow the current settings: Foot Lock's own contact curves are labelled again,
an animator's edits are kept, and a rerun on a result refreshes it from its source."""

from pathlib import Path

import numpy as np
import pytest
from blender_scenes import import_clip

pytestmark = pytest.mark.blender


def contact_curve(obj, bone):
    from foot_lock.adapters import armature

    return armature.read_contact_curve(obj, obj.animation_data.action, bone, np.arange(1, 318))


def test_rerun_with_other_contact_settings_relabels_and_refreshes_the_result(addon, sliding):
    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result = obj.animation_data.action
    toe = obj.foot_lock.legs[0].toe
    first = contact_curve(obj, toe)
    assert result.name == "walk_sliding.footlock"

    obj.foot_lock.speed_threshold *= 0.3  # far stricter: fewer planted frames
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.animation_data.action.name == "walk_sliding.footlock"  # refreshed, not stacked
    assert [a.name for a in addon.data.actions] == ["walk_sliding", "walk_sliding.footlock"]
    assert contact_curve(obj, toe).sum() < first.sum()
    assert obj.animation_data.action["foot_lock_source"] == source
    from foot_lock.adapters import armature

    assert not armature.has_contact_curve(obj, source, toe)  # the source is still untouched


def test_a_rerun_on_the_result_of_a_renamed_source_refreshes_it_from_that_source(addon, sliding):
    """The source renamed after the fix: the result still knows it (a reference, not a
    name). A rerun on the result made ``.footlock.footlock`` from the result itself, solving
    the fixed motion again; a result of an earlier version, which holds the name, still
    finds a source of that name."""
    from foot_lock.adapters import sources

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    fixed = keys_of(obj)
    source.name = "walk_v2"
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert sorted(a.name for a in addon.data.actions) == ["walk_sliding.footlock", "walk_v2"]
    result = obj.animation_data.action
    assert result["foot_lock_source"] == source and keys_of(obj) == fixed  # solved from the source again
    result["foot_lock_source"] = "walk_v2"  # as an earlier version stored it
    assert sources.result_origin(result) == source


def test_rerun_keeps_contacts_an_animator_edited_on_the_result(addon, sliding):
    obj = import_clip(addon, sliding)
    addon.ops.foot_lock.remove_sliding()
    toe = obj.foot_lock.legs[0].toe
    from foot_lock.adapters import action_compat, armature

    fcurve = action_compat.find_fcurve(action_compat.channel_bag(obj, obj.animation_data.action),
                                       armature.contact_data_path(toe), 0)
    for key in fcurve.keyframe_points:  # the animator drags every key to 0: this foot never plants
        key.co.y = 0.0
    fcurve.update()
    obj.foot_lock.speed_threshold *= 0.5
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.animation_data.action.name == "walk_sliding.footlock"
    assert np.all(contact_curve(obj, toe) == 0.0)
    other = obj.foot_lock.legs[1].toe
    assert contact_curve(obj, other).max() == 1.0  # the tool's own curve was labelled again

    obj.foot_lock.overwrite_contacts = True  # the same meaning as --overwrite-contacts
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert contact_curve(obj, toe).max() == 1.0


def run_again_from_the_source(addon, obj, source):
    """The animator goes back to the source action, changes a setting and fixes it again."""
    from foot_lock.adapters import action_compat

    action_compat.assign_action(obj, source)
    obj.foot_lock.speed_threshold *= 0.3
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    return obj.animation_data.action


def test_rerun_from_the_source_refreshes_its_own_untouched_result(addon, sliding):
    from foot_lock.adapters import action_compat, armature

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    toe, other = (leg.toe for leg in obj.foot_lock.legs)
    first = contact_curve(obj, other)
    fcurve = action_compat.find_fcurve(action_compat.channel_bag(obj, obj.animation_data.action),
                                       armature.contact_data_path(toe), 0)
    for key in fcurve.keyframe_points:  # an animator's contact edit does not make it someone else's
        key.co.y = 0.0
    fcurve.update()

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == "walk_sliding.footlock"  # not .footlock.001
    assert [a.name for a in addon.data.actions] == ["walk_sliding", "walk_sliding.footlock"]
    assert np.all(contact_curve(obj, toe) == 0.0)  # the edit obeyed and kept
    assert contact_curve(obj, other).sum() < first.sum()  # the rest follows the new setting
    assert not armature.has_contact_curve(obj, source, toe)


def test_rerun_from_the_source_never_replaces_a_result_an_animator_edited(addon, sliding):
    from foot_lock.adapters import action_compat

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    edited = obj.animation_data.action
    location = next(fc for fc in action_compat.iter_fcurves(obj, edited) if fc.data_path.endswith(".location"))
    location.keyframe_points[10].co.y += 0.05  # the animator polishes the fix by hand
    location.update()
    polished = location.keyframe_points[10].co.y

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == "walk_sliding.footlock.001" and edited.name == "walk_sliding.footlock"
    assert location.keyframe_points[10].co.y == polished


def fixed_with_a_copied_arm(addon, sliding):
    """The clip imported and fixed: the object, its source action, the result and one of the
    result's curves the fix copied from the source unsolved (an arm's rotation)."""
    from foot_lock.adapters import action_compat, armature

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    edited = obj.animation_data.action
    solved = {armature.bone_data_path(bone) for leg in obj.foot_lock.legs
              for bone in (leg.thigh, leg.shin, leg.foot, leg.toe)} | {armature.bone_data_path(obj.foot_lock.pelvis)}
    arm = next(fc for fc in action_compat.iter_fcurves(obj, edited)
               if ".rotation" in fc.data_path and fc.data_path.rpartition(".")[0] not in solved)
    return obj, source, edited, arm


def test_an_edit_of_a_channel_the_fix_copied_also_makes_the_result_the_animators(addon, sliding):
    """The result's digest covers the curves copied from the source unsolved (an arm), not
    only the ones the fix keyed, though the click never reads them back from the result."""
    obj, source, edited, arm = fixed_with_a_copied_arm(addon, sliding)
    arm.keyframe_points[40].co.y += 0.1
    arm.update()

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == "walk_sliding.footlock.001" and edited.name == "walk_sliding.footlock"


@pytest.mark.parametrize("edit", ["polished key", "new channel"])
def test_rerun_on_a_result_an_animator_changed_keeps_it_and_makes_a_new_one(addon, sliding, edit):
    """Clicked again on the result itself (the active action), after polishing an arm key
    or keying a new channel on it: the polish stays where it was made, the fix goes to a
    new action, and the report says so (it replaced the polished result silently)."""
    obj, source, edited, arm = fixed_with_a_copied_arm(addon, sliding)
    if edit == "polished key":
        arm.keyframe_points[40].co.y += 0.1
        arm.update()
        path, index, frame, value = arm.data_path, arm.array_index, arm.keyframe_points[40].co.x, arm.keyframe_points[40].co.y
    else:
        head = obj.pose.bones["Head"]
        head.scale = (1.5, 1.5, 1.5)
        head.keyframe_insert("scale", index=0, frame=151)
        path, index, frame, value = 'pose.bones["Head"].scale', 0, 151.0, 1.5
    from foot_lock.adapters import action_compat

    obj.foot_lock.speed_threshold *= 0.5
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result = obj.animation_data.action
    assert result.name == "walk_sliding.footlock.001" and edited.name == "walk_sliding.footlock"
    kept = action_compat.find_fcurve(action_compat.channel_bag(obj, edited), path, index)
    assert kept.evaluate(frame) == pytest.approx(value)
    assert edited.use_fake_user  # played by nothing now, it survives saving
    assert result["foot_lock_source"] == source
    from foot_lock.adapters import jobs

    warnings = jobs.remove_sliding(obj, addon.context.scene).result.warnings  # again on the new result: untouched
    assert not any("was changed since" in warning for warning in warnings)
    assert obj.animation_data.action.name == "walk_sliding.footlock.001"


def test_rerun_on_a_changed_result_says_which_action_it_kept(addon, sliding):
    obj, _, _, arm = fixed_with_a_copied_arm(addon, sliding)
    arm.keyframe_points[40].co.y += 0.1
    arm.update()
    from foot_lock.adapters import jobs

    warnings = jobs.remove_sliding(obj, addon.context.scene).result.warnings
    assert any("'walk_sliding.footlock' was changed since Foot Lock made it" in warning
               and "'walk_sliding.footlock.001'" in warning for warning in warnings)


def test_an_interpolation_edit_of_a_copied_channel_makes_the_result_the_animators(addon, sliding):
    """The digest covers how every key of every curve interpolates, not only its frame and value."""
    obj, source, edited, arm = fixed_with_a_copied_arm(addon, sliding)
    assert arm.keyframe_points[40].interpolation == "LINEAR"
    arm.keyframe_points[40].interpolation = "CONSTANT"

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == "walk_sliding.footlock.001" and edited.name == "walk_sliding.footlock"


@pytest.mark.parametrize("edit", [False, True])
def test_a_result_stamped_by_an_earlier_version_is_still_told_untouched_or_edited(addon, sliding, edit):
    """Results stamped with the digest earlier versions stored (one per curve, then hashed
    together) are refreshed while untouched and kept once edited, as before."""
    from foot_lock.adapters import action_compat, results

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    earlier = obj.animation_data.action
    earlier["foot_lock_digest"] = results._per_curve_digest(obj, earlier)
    assert len(earlier["foot_lock_digest"]) == 16
    if edit:
        location = next(fc for fc in action_compat.iter_fcurves(obj, earlier) if fc.data_path.endswith(".location"))
        location.keyframe_points[10].co.y += 0.05

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == ("walk_sliding.footlock.001" if edit else "walk_sliding.footlock")


@pytest.mark.parametrize("edit", [False, True])
def test_a_result_stamped_with_the_sha1_digest_is_still_told_untouched_or_edited(addon, sliding, edit):
    """Results stamped with the SHA-1 digest of the versions before the CRC-32 one ("2:")
    are refreshed while untouched and kept once edited, as before."""
    from foot_lock.adapters import action_compat, results

    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    earlier = obj.animation_data.action
    earlier["foot_lock_digest"] = results._sha1_digest(obj, earlier)
    assert earlier["foot_lock_digest"].startswith("2:") and len(earlier["foot_lock_digest"]) == 18
    if edit:
        location = next(fc for fc in action_compat.iter_fcurves(obj, earlier) if fc.data_path.endswith(".location"))
        location.keyframe_points[10].co.y += 0.05

    result = run_again_from_the_source(addon, obj, source)
    assert result.name == ("walk_sliding.footlock.001" if edit else "walk_sliding.footlock")


def test_rerun_from_the_source_never_replaces_an_action_someone_else_named_like_a_result(addon, sliding):
    from foot_lock.adapters import action_compat

    obj = import_clip(addon, sliding)
    theirs = addon.data.actions.new("walk_sliding.footlock")
    theirs.use_fake_user = True
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert obj.animation_data.action.name == "walk_sliding.footlock.001"
    assert addon.data.actions["walk_sliding.footlock"] == theirs
    assert not list(action_compat.iter_fcurves(obj, theirs))


def two_characters_playing_one_action(addon, sliding):
    """Two armatures of the same character playing the same source action (as a glTF
    with two armatures imports); the second one stricter about contacts."""
    from foot_lock.adapters import action_compat

    first, second = import_clip(addon, sliding), import_clip(addon, sliding)
    own = second.animation_data.action
    action_compat.assign_action(second, first.animation_data.action)
    addon.data.actions.remove(own)
    second.foot_lock.speed_threshold *= 0.3
    return first, second


def select_only(addon, obj):
    for other in addon.context.view_layer.objects:
        other.select_set(other == obj)
    addon.context.view_layer.objects.active = obj


def keys_of(obj):
    from foot_lock.adapters import action_compat

    action = obj.animation_data.action
    return action.name, [tuple(key.co) for fcurve in action_compat.iter_fcurves(obj, action)
                         for key in fcurve.keyframe_points]


def test_fixing_one_character_never_replaces_the_result_another_one_plays(addon, sliding):
    first, second = two_characters_playing_one_action(addon, sliding)
    select_only(addon, first)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    kept = keys_of(first)
    assert kept[0] == "walk_sliding.footlock"

    select_only(addon, second)  # from the shared source: the first one's result is not its own
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    assert keys_of(first) == kept
    assert second.animation_data.action.name == "walk_sliding.footlock.001"
    assert keys_of(second) != kept  # its own, stricter labels

    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}  # from its own result: refreshed in place
    assert second.animation_data.action.name == "walk_sliding.footlock.001"
    assert keys_of(first) == kept

    source = addon.data.actions["walk_sliding"]
    assert run_again_from_the_source(addon, second, source).name == "walk_sliding.footlock.001"  # its own, refreshed
    assert keys_of(first) == kept
    assert sorted(action.name for action in addon.data.actions) == [
        "walk_sliding", "walk_sliding.footlock", "walk_sliding.footlock.001"]


def test_a_rerun_on_a_result_two_characters_play_leaves_the_other_one_its_result(addon, sliding):
    from foot_lock.adapters import action_compat

    first, second = two_characters_playing_one_action(addon, sliding)
    select_only(addon, first)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    shared = first.animation_data.action
    action_compat.assign_action(second, shared)  # both play the first one's result
    kept = keys_of(first)

    select_only(addon, second)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}  # rerun on the shared result
    assert first.animation_data.action == shared and keys_of(first) == kept
    assert second.animation_data.action.name == "walk_sliding.footlock.001"
    assert second.animation_data.action["foot_lock_source"] == addon.data.actions["walk_sliding"]


def test_a_result_fixed_for_another_armature_s_slot_is_kept_for_it_untold(addon):
    """The glTF fox: two armatures play the same actions, each its own slot (4.4+). The
    first one's result holds its fix in its slot and the second one's curves as they
    were; the second one run from that result makes its own, and leaves the first one's as
    it is (saved with a fake user once nothing plays it), without telling it "changed":
    nobody edited it."""
    from foot_lock.adapters import action_compat, jobs

    addon.ops.import_scene.gltf(filepath=str(Path(__file__).parent / "data" / "assets" / "fox.glb"))
    first, second = addon.data.objects["root"], addon.data.objects["root.001"]
    run = first.animation_data.action  # "Run" (before 4.4, one action per armature: "Run_root")
    jobs.remove_sliding(first, addon.context.scene)
    fixed = first.animation_data.action
    kept = keys_of(first)
    action_compat.assign_action(first, next(action for action in addon.data.actions if action.name.startswith("Walk")))
    action_compat.assign_action(second, fixed)

    warnings = jobs.remove_sliding(second, addon.context.scene).result.warnings
    assert not any("was changed" in warning for warning in warnings)
    # Authored in centimetres, read as metres: a fox with legs of tens of metres, said so.
    (size,) = [warning for warning in warnings if warning.startswith("the legs measure")]
    assert "unless the character is that large" in size and float(size.split()[3]) > 10.0
    if action_compat.LAYERED_ACTIONS:  # else the two share their curves: the result is the second one's too
        assert second.animation_data.action.name == f"{run.name}.footlock.001"
        assert fixed.use_fake_user
        action_compat.assign_action(first, fixed)
        assert keys_of(first) == kept


@pytest.mark.parametrize("letter", ["a", "é"])  # one byte of UTF-8, two
def test_an_action_named_to_blenders_limit_gets_results_that_keep_their_suffix(addon, sliding, letter):
    """Blender cuts a name at its limit (63 bytes before 5.0): the fix of an action named up
    to it came out '<name cut>.fo', and a rerun, not finding it, made another beside it.
    Each result's stem is shortened instead; reruns refresh it."""
    obj = import_clip(addon, sliding)
    source = obj.animation_data.action
    limit = addon.types.ID.bl_rna.properties["name"].length_max - 1  # bytes
    source.name = letter * (limit // len(letter.encode()))
    assert len(source.name.encode()) > limit - 2  # the whole name (a two-byte letter may leave one spare)
    assert addon.ops.foot_lock.remove_sliding() == {"FINISHED"}
    result = obj.animation_data.action.name
    assert result.endswith(".footlock") and source.name.startswith(result[: -len(".footlock")])
    assert run_again_from_the_source(addon, obj, source).name == result  # refreshed (the earlier one replaced)
    assert sorted(action.name for action in addon.data.actions) == sorted([source.name, result])
    obj.animation_data.action = source
    assert addon.ops.foot_lock.root_motion_from_feet() == {"FINISHED"}
    assert obj.animation_data.action.name.endswith(".rootmotion")
    obj.animation_data.action = source
    obj.foot_lock.preview = True
    assert addon.ops.foot_lock.bake_preview() == {"FINISHED"}
    assert obj.animation_data.action.name.endswith(".preview")


def test_the_status_line_says_why_the_result_is_not_named_after_its_action(addon, sliding):
    """Beside an action someone else named ``<action>.footlock`` the fix goes to
    ``.footlock.001``: the line the button shows says which action kept the name, and why
    (the command line's note said it, the sidebar did not)."""
    from foot_lock.adapters import jobs

    obj = import_clip(addon, sliding)
    addon.data.actions.new("walk_sliding.footlock").use_fake_user = True
    outcome = jobs.remove_sliding(obj, addon.context.scene)  # what the button runs; it shows the summary
    assert outcome.action.name == "walk_sliding.footlock.001"
    assert jobs.summary(outcome).startswith(
        "317 frames baked to 'walk_sliding.footlock.001' ('walk_sliding.footlock' kept its name: it does not say "
        "what it was made from")
    again = jobs.remove_sliding(obj, addon.context.scene)  # on its result: made again in its place, as said again
    assert again.action.name == "walk_sliding.footlock.001" and again.name_note == outcome.name_note
