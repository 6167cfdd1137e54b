# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared argument specs of the node modules (documented in doc_fragments/node_volumes.py).

The volume item is docs/contracts.md section 1. Modules deepcopy these dicts into their own spec.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options, names, phases, words

POD_SPEC = dict(
    uid=dict(type="str", required=True),
    name=dict(type="str", default=""),
    read_only=dict(type="bool", default=False),
    fs_group=dict(type="int"),
    fs_group_change_policy=dict(type="str", choices=list(names.FS_GROUP_CHANGE_POLICIES)),
    service_account=dict(type="str", default=""),
)

VOLUME_SPEC = dict(
    pv_name=dict(type="str", required=True),
    # CSI items: required (node/volume.py volume_item checks each plugin's fields); null for local and hostPath
    driver=dict(type="str"),
    volume_handle=dict(type="str"),
    # no choices: the plugin registry's names (volume/), checked by node/volume.py volume_item, so that a new plugin
    # is its file plus its registry line
    plugin=dict(type="str", default="kubernetes.io/csi"),
    path=dict(type="str"),
    host_path_type=dict(type="str", default="", choices=["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File",
                                                         "Socket", "CharDevice", "BlockDevice"]),
    volume_attributes=dict(type="dict", default={}),
    capacity_bytes=dict(type="int"),
    mode=dict(type="str", default="Filesystem", choices=["Filesystem", "Block"]),
    # no choices: another type fails its volume alone, when it would be formatted (filesystem_to_create)
    fs_type=dict(type="str", default="ext4"),
    mount_options=dict(type="list", elements="str", default=[]),
    read_only=dict(type="bool", default=False),
    multi_attach=dict(type="bool", default=False),
    pods=dict(type="list", elements="dict", default=[], options=POD_SPEC),
    detach=dict(type="bool", default=True),
    unmount_device=dict(type="bool"),
    ephemeral=dict(type="bool", default=False),
    # an external CSI driver's volume (drivers/external/): its CSIDriver's attachRequired and the PV's accessModes
    attach_required=dict(type="bool", default=True),
    access_modes=dict(type="list", elements="str", default=[]),
    pod_info_on_mount=dict(type="bool", default=False),
    # its PV's secret references ({kind: "namespace/name"}) and, filled in by node_phases from the Secret objects,
    # the secrets themselves ({kind: {key: value}}): passed to the driver's calls only, never in a result
    # references (kind: namespace/name), never a secret's value
    secret_refs=dict(type="dict", default={}, no_log=False),
    secrets=dict(type="dict", default={}, no_log=True),
    # a driver whose Controller service runs on a host of the inventory: the publish_context its
    # ControllerPublishVolume answered there (node_phases fills it in from the run's controller task)
    controller_publish_context=dict(type="dict"),
    controller_host=dict(type="str"),  # that host (plan/remote_controller.py): the node reads it from driver_options
    # the nodes the plan detaches the volume from before this attach: a check run counts their holds released
    detached_first_from=dict(type="list", elements="str", default=[]),
)

NODE_SPEC = dict(
    node_name=dict(type="str"),
    # whose words a remedy uses (common/words.py): this module's options, or the reconcile role's variables
    words=dict(type="str", default=words.MODULE, choices=list(words.WORDS)),
)

# loop.kubevol.io's default pools (common/driver_options.py DEFAULTS, the one place they are written)
DEFAULT_LOOP_POOLS = list(driver_options.DEFAULTS[names.LOOP_DRIVER]["pools"])

# Deprecated in favour of driver_options' loop.kubevol.io pools: no default, so that a given value is told apart
# (it sets loop.kubevol.io's pools; both given with different values is an error: driver_options.with_loop_pools_alias)
LOOP_POOLS_ALIAS = dict(type="list", elements="str", removed_in_version="2.0.0",
                        removed_from_collection="kubevol.volumes")

# The node's settings: one group, given whole to every node module (top-level options of the same names, documented
# once in doc_fragments/node_volumes.py SETTINGS) and, as the one dict option ``node_settings``, to the controller-side
# tasks that run them (node_phases, csi_controller, volume_provision, volume_audit, pod_volumes_wait). Each setting is
# read where it is used, from NodeContext.settings (node/context.py node_context builds the one context); nothing
# between names it. docs/development.md "Adding a node setting".
SETTINGS_SPEC = dict(
    kubelet_dir=dict(type="str", default="/var/lib/kubelet"),
    run_dir=dict(type="str", default="/run/kubevol"),
    lock_timeout=dict(type="int", default=60),
    # the node's own configuration, {plugin or driver name: {option: value}} (common/driver_options.py): e.g. the
    # loop driver's pools, which a PV's volumeAttributes.pool must name one of
    driver_options=dict(type="dict", default={}),
    loop_pools=copy.deepcopy(LOOP_POOLS_ALIAS),
    # the operator's: nodes down for good whose holds on a loop image this node may drop at attach (read by
    # node/driver_loop_holders.py)
    force_release_holders=dict(type="list", elements="str", default=[]),
    # every node command is bounded (node/runner.py): the whole-device tools get the long limit
    command_timeout=dict(type="int", default=300),
    long_command_timeout=dict(type="int", default=3600),
)


def settings_of(params):
    """The node's settings group from a module's (or a task's) parameters: each setting given, else its default."""
    group = {}
    for key, spec in SETTINGS_SPEC.items():
        value = params.get(key)
        group[key] = copy.deepcopy(spec.get("default")) if value is None else value
    return group


def settings_argspec():
    """The ``node_settings`` option of the controller-side tasks: the group as one dict (doc_fragments/node_volumes.py
    TASK_SETTINGS). Its suboptions have no defaults, so that a setting left out is told apart (task_settings)."""
    options = {}
    for key, spec in SETTINGS_SPEC.items():
        options[key] = dict((k, v) for k, v in copy.deepcopy(spec).items()
                            if k not in ("default", "removed_in_version", "removed_from_collection"))
    return dict(type="dict", options=options)


def task_settings(params, legacy=()):
    """The group a controller-side task hands whole to every node module it runs: ``node_settings`` over the task's
    older top-level options of the same names (``legacy``, those it still accepts), over the defaults; its
    driver_options checked once here, with the deprecated loop_pools folded in (the node modules get them checked)."""
    given = dict((key, params.get(key)) for key in legacy if params.get(key) is not None)
    given.update((key, value) for key, value in (params.get("node_settings") or {}).items() if value is not None)
    group = settings_of(given)
    group["driver_options"] = driver_options.validate(
        driver_options.with_loop_pools_alias(group["driver_options"], group.pop("loop_pools")))
    return group


def node_argspec(**extra):
    """node_name, words and the node's settings (every node module) plus ``extra``."""
    spec = copy.deepcopy(NODE_SPEC)
    spec.update(copy.deepcopy(SETTINGS_SPEC))
    spec.update(extra)
    return spec


def volumes_argspec(volumes_required=True, **extra):
    """volumes, node_name, words and the node's settings plus ``extra`` (the volume modules).

    volumes_required=False makes ``volumes`` optional (default []), for volume_detach."""
    volumes = dict(type="list", elements="dict", options=copy.deepcopy(VOLUME_SPEC))
    if volumes_required:
        volumes["required"] = True
    else:
        volumes["default"] = []
    spec = node_argspec(volumes=volumes)
    spec.update(extra)
    return spec


def setup_phase_specs():
    """node_volume_setup's phases and the options each takes (its module documents them)."""
    volumes = dict(type="list", elements="dict", default=[], options=copy.deepcopy(VOLUME_SPEC))
    specs = dict((phase, dict(volumes=copy.deepcopy(volumes))) for phase in phases.SETUP_PHASES)
    specs["attach"].update(provision=dict(type="bool", default=False))
    specs["mount"].update(force=dict(type="bool", default=False), device_timeout=dict(type="int", default=30))
    return specs


def setup_argspec():
    """node_volume_setup: the node's settings and one dict per phase (checked against setup_phase_specs)."""
    spec = node_argspec()
    spec.update((phase, dict(type="dict")) for phase in setup_phase_specs())
    return spec


# The top-level options of the node's settings each controller-side task took before node_settings: still accepted,
# under node_settings (task_settings); each with the group's own default.
NODE_PHASES_LEGACY = ("kubelet_dir", "lock_timeout", "driver_options", "loop_pools", "force_release_holders",
                      "command_timeout", "long_command_timeout")
CSI_CONTROLLER_LEGACY = ("driver_options",)


def legacy_argspec(keys):
    """The older top-level options ``keys`` of the node's settings, as SETTINGS_SPEC has them."""
    return dict((key, copy.deepcopy(SETTINGS_SPEC[key])) for key in keys)


def node_phases_argspec():
    """The node_phases action plugin's arguments (plugins/action/node_phases.py; its module file documents them)."""
    spec = legacy_argspec(NODE_PHASES_LEGACY)
    spec.update(
        plan=dict(type="dict"),
        phases=dict(type="list", elements="str", required=True,
                    choices=[phases.FACTS] + list(phases.NAMES)),
        failures=dict(type="dict", default={}),
        node_name=dict(type="str", required=True),
        node_settings=settings_argspec(),
        provision=dict(type="bool", default=False),
        run_lock=dict(type="dict"),
        cluster_store=dict(type="dict", no_log=True),
        # {unique volume name: {node: publish_context}}: the run's controller task's ControllerPublishVolume answers
        controller_published=dict(type="dict", default={}),
    )
    return spec


def csi_controller_argspec():
    """The csi_controller action plugin's arguments (plugins/action/csi_controller.py; its module file documents
    them)."""
    spec = legacy_argspec(CSI_CONTROLLER_LEGACY)
    spec.update(
        plan=dict(type="dict", required=True),
        controller_host=dict(type="str", required=True),
        failures=dict(type="dict", default={}),
        node_settings=settings_argspec(),
        run_lock=dict(type="dict"),
        cluster_store=dict(type="dict", no_log=True),
    )
    return spec
