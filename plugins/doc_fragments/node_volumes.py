# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # node_name: every node module (with SETTINGS, and the words fragment for its option words)
    NODE = r'''
options:
  node_name:
    description:
      - The Kubernetes node name of this host (used in VolumeAttachment names and C(vol_data.json)).
      - Defaults to the host name, lower-cased, as the kubelet does.
    type: str
'''

    # The node's settings: one group, the same options on every node module (module_utils/node/node_args.py
    # SETTINGS_SPEC, read through node/context.py node_context). TASK_SETTINGS documents the same group as the one
    # dict option node_settings of the tasks that run the node modules.
    SETTINGS = r'''
options:
  kubelet_dir:
    description:
      - The kubelet root directory on the node. Every path kubevol reads or writes stays inside it (or inside a
        driver's pool).
      - One of the node's settings, the same on every node module (with O(run_dir), O(lock_timeout),
        O(driver_options), O(command_timeout), O(long_command_timeout), O(force_release_holders)); the reconcile role
        gives them as one group, C(node_settings).
      - The reconcile role passes C(kubevol_kubelet_dir).
    type: str
    default: /var/lib/kubelet
  run_dir:
    description:
      - Directory for the per-volume lock files (C(<run_dir>/locks/<sha256 of the unique volume name>.lock)).
    type: str
    default: /run/kubevol
  lock_timeout:
    description:
      - Seconds to wait for another kubevol run that holds a volume's lock before failing with LockTimeout.
    type: int
    default: 60
  driver_options:
    description:
      - The operator's options of each volume plugin and CSI driver on this node, as a mapping of plugin or driver
        name to its options; each name's options not given keep their defaults.
      - C(loop.kubevol.io) C(pools) (default V([/var/lib/kubevol/pool])) - the directories this node keeps loop images
        in. A volume whose C(volumeAttributes.pool) is not one of them (compared after resolving symlinks) is refused
        before anything runs, so whoever can write a PV cannot make the node open, format or grow a file elsewhere.
      - C(kubernetes.io/local-volume) C(paths) (default V([/mnt/disks])) and C(kubernetes.io/host-path) C(paths)
        (default V([]), nothing allowed) - the directories local and hostPath PVs may name (absolute, normalized paths).
      - An external CSI driver (an entry with C(socket), C(controller) or C(controller_socket)) - C(socket), C(timeout),
        and C(controller) (V(node), or the inventory host its controller plugin runs on, with C(controller_socket), its
        socket there); docs/csi.md.
      - A name that is neither a volume plugin (C(kubernetes.io/csi), C(kubernetes.io/local-volume),
        C(kubernetes.io/host-path)) nor a driver kubevol has, an option the name does not have, or a value of the wrong
        shape fails the call before anything runs, naming the key and what is allowed.
      - The reconcile role passes C(kubevol_driver_options).
    type: dict
    default: {}
    version_added: 0.2.0
  command_timeout:
    description:
      - Seconds each node command (mount, losetup, blkid, ...) may run. A command past it is killed with every
        process it started (its process group) and fails its volume, naming the command line and the time waited;
        the other volumes of the call go on.
      - The reconcile role passes C(kubevol_command_timeout).
    type: int
    default: 300
    version_added: 0.2.0
  long_command_timeout:
    description:
      - The same for the tools that walk a whole device (mkfs, fsck, filesystem growth, wipefs).
      - The reconcile role passes C(kubevol_long_command_timeout).
    type: int
    default: 3600
    version_added: 0.2.0
  force_release_holders:
    description:
      - The operator's release of other nodes' holds on C(loop.kubevol.io) images, for nodes that are down for good
        (powered off, their devices gone). Attaching an image whose pool holder record
        (C(<pool>/.kubevol-holders/)) names a node listed here drops that node's hold first, reported in
        C(released_holders) of the volume and with a warning.
      - Otherwise an image another node holds is never attached, adopted or reused (unless the volume is
        multi-attach); the attach fails naming the holder and since when, and waits for that node's own detach.
        The out-of-service taint does not release a hold, since a node that was only unreachable still has its
        device.
      - A loop device that still backs the image (the released node is not down, on a shared kernel) is still
        refused, never adopted and never doubled.
      - The reconcile role passes C(kubevol_force_release_holders).
    type: list
    elements: str
    default: []
    version_added: 0.2.0
'''

    # node_settings of the tasks that run node modules on a host (node_phases, csi_controller, volume_provision,
    # volume_audit, pod_volumes_wait): the node's settings group whole, handed as is to every node module they run.
    TASK_SETTINGS = r'''
options:
  node_settings:
    description:
      - The node's settings as one group, checked once on the controller and handed whole to every node module this
        task runs on the host. Each key is the node modules' option of the same name (see
        M(kubevol.volumes.node_volume_mount)); a key left out keeps that option's default.
      - A key given here wins over this task's older top-level option of the same name, which is still accepted.
      - The reconcile role passes C(kubevol_node_settings), built from its variables (C(kubevol_kubelet_dir),
        C(kubevol_lock_timeout), C(kubevol_driver_options), C(kubevol_command_timeout),
        C(kubevol_long_command_timeout), C(kubevol_force_release_holders)).
    type: dict
    version_added: 0.2.0
    suboptions:
      kubelet_dir:
        description: The kubelet root directory on the node (default V(/var/lib/kubelet)).
        type: str
      run_dir:
        description: The node modules' state directory (default V(/run/kubevol)).
        type: str
      lock_timeout:
        description: Seconds to wait for a volume's lock on the node (default V(60)).
        type: int
      driver_options:
        description: The operator's options of each volume plugin and CSI driver (default V({})).
        type: dict
      loop_pools:
        description: Deprecated, to be removed in 2.0.0; use C(driver_options) C(loop.kubevol.io) C(pools).
        type: list
        elements: str
      command_timeout:
        description: Seconds each node command may run (default V(300)).
        type: int
      long_command_timeout:
        description: Seconds each whole-device tool may run (default V(3600)).
        type: int
      force_release_holders:
        description:
          - Nodes down for good whose holds on C(loop.kubevol.io) images may be dropped at attach (default V([])).
        type: list
        elements: str
'''

    # The volume modules (together with NODE and SETTINGS): the volume item of docs/contracts.md section 1.
    DOCUMENTATION = r'''
options:
  volumes:
    description:
      - The volumes to act on, one node's whole phase in one call. A single volume is a list of one.
      - Every name is checked before anything runs; a PV name, pod uid or handle with C(/), C(..), NUL or
        control characters is refused.
      - A volume whose O(volumes[].driver) has no kubevol backend on the node fails, named with its driver, the node
        and the drivers the node has; nothing runs on it and it is never skipped as done. A volume of another CSI
        driver is left to that driver's node plugin by not listing it (the planner acts only on
        C(kubevol_known_drivers)). The other volumes are handled normally.
    type: list
    elements: dict
    required: true
    suboptions:
      pv_name:
        description: PersistentVolume name (one path component).
        type: str
        required: true
      driver:
        description:
          - CSI driver name (C(spec.csi.driver)), for example C(loop.kubevol.io). Required for a CSI volume; null for
            a local or hostPath volume.
        type: str
      volume_handle:
        description:
          - C(spec.csi.volumeHandle). For C(loop.kubevol.io) the image file name inside the pool; a handle that
            resolves outside the pool is refused. Required for a CSI volume; for local and hostPath the PV name (or
            absent).
        type: str
      plugin:
        description:
          - The volume plugin that serves the volume, as the kubelet's C(FindPluginBySpec) finds it;
            C(kubernetes.io/csi) (PV C(spec.csi)), C(kubernetes.io/local-volume) (PV C(spec.local)) or
            C(kubernetes.io/host-path) (PV C(spec.hostPath)); any other name fails the task before anything runs,
            naming the plugins the node has.
          - Local and hostPath volumes are never attached. A local directory is bind-mounted into each pod; a local
            block device is formatted only if blank, mounted at C(plugins/kubernetes.io/local-volume/mounts/<pv>) and
            bind-mounted into each pod. A hostPath volume mounts nothing; its O(volumes[].host_path_type) is checked.
        type: str
        default: kubernetes.io/csi
      path:
        description:
          - Local and hostPath only, C(spec.local.path) or C(spec.hostPath.path). Absolute and normalized; the node
            serves it only under the allowed directories of its plugin in O(driver_options) (C(paths)), checked as
            written and with symlinks resolved. Null only in a teardown the planner built from node facts alone.
        type: str
      host_path_type:
        description: hostPath only, C(spec.hostPath.type); checked as the kubelet checks it (V("") checks nothing).
        type: str
        default: ""
        choices: ["", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice]
      volume_attributes:
        description: C(spec.csi.volumeAttributes); for C(loop.kubevol.io) C(pool) (default C(/var/lib/kubevol/pool)).
        type: dict
        default: {}
      capacity_bytes:
        description: PV capacity in bytes (target size for provisioning and controller expansion).
        type: int
      mode:
        description: PV C(spec.volumeMode).
        type: str
        default: Filesystem
        choices: [Filesystem, Block]
      fs_type:
        description:
          - Filesystem to create on a blank device (Filesystem mode) - C(ext4), C(ext3), C(xfs) or C(btrfs).
          - Another type fails this volume alone, and only when its device would be formatted; the other volumes
            of the call go on.
        type: str
        default: ext4
      mount_options:
        description: PV C(spec.mountOptions), one option per element.
        type: list
        elements: str
        default: []
      read_only:
        description:
          - The PV itself is read-only (PV C(spec.csi.readOnly), or its access modes are only ReadOnlyMany). Then the
            global mount and every pod mount are read-only.
          - Otherwise the global mount is read-write, whatever the pods do; a pod's own read-only is
            O(volumes[].pods[].read_only).
        type: bool
        default: false
      multi_attach:
        description:
          - The PV's access modes let more than one node attach it (ReadWriteMany, ReadOnlyMany). Otherwise the
            backend refuses to attach it to a node while another node holds it, as a cloud disk API answers
            VolumeInUse (for C(loop.kubevol.io), the holder record kept in the pool, under a lock).
        type: bool
        default: false
      pods:
        description:
          - Pod mounts. For M(kubevol.volumes.node_volume_mount) the pods to publish the volume to; for
            M(kubevol.volumes.volume_detach) the pod mounts to remove.
        type: list
        elements: dict
        default: []
        suboptions:
          uid:
            description: Pod UID (one path component).
            type: str
            required: true
          name:
            description: C(namespace/name) of the pod, for messages.
            type: str
            default: ''
          read_only:
            description:
              - Publish read-only to this pod (its volume mount or PVC source is read-only). Only its bind mount is
                read-only.
            type: bool
            default: false
          fs_group:
            description:
              - The pod's C(securityContext.fsGroup), when the volume's CSIDriver C(fsGroupPolicy) lets the kubelet
                apply it (the planner decides). After the bind mount, every file and directory of the volume gets
                this group and group read-write, and directories the setgid bit, as the kubelet's
                SetVolumeOwnership does. Not applied to Block volumes or read-only pod mounts.
            type: int
          fs_group_change_policy:
            description:
              - The pod's C(securityContext.fsGroupChangePolicy). V(OnRootMismatch) skips the walk when the
                volume root already has the group and the bits; V(Always) (the default) checks every entry.
            type: str
            choices: [Always, OnRootMismatch]
          service_account:
            description:
              - The pod's C(spec.serviceAccountName). An external CSI driver whose CSIDriver sets C(podInfoOnMount)
                gets it in NodePublishVolume's C(volume_context), with the pod's name, namespace and uid.
            type: str
            default: ""
      detach:
        description:
          - M(kubevol.volumes.volume_detach) only. After the pod unmounts, also unmount the global mount and detach
            the device. Other modules ignore it.
        type: bool
        default: true
      unmount_device:
        description:
          - M(kubevol.volumes.volume_detach) only. After the pod unmounts, unmount the global mount once no pod mount
            remains, but keep the device attached unless O(volumes[].detach) is set too. Defaults to the value of
            O(volumes[].detach). Other modules ignore it.
        type: bool
      attach_required:
        description:
          - An external CSI driver's volume (one named in O(driver_options) with C(controller) or C(socket)), its
            CSIDriver's C(attachRequired). When false, no ControllerPublishVolume is made (as the planner builds it).
        type: bool
        default: true
      access_modes:
        description:
          - An external CSI driver's volume, the PV's C(spec.accessModes), mapped to CSI access modes as the kubelet
            maps them. Empty means C(ReadWriteOnce) (C(ReadWriteMany) with O(volumes[].multi_attach)).
        type: list
        elements: str
        default: []
      pod_info_on_mount:
        description:
          - An external CSI driver's volume, its CSIDriver's C(podInfoOnMount), as the planner builds it. When true,
            NodePublishVolume's C(volume_context) carries C(csi.storage.k8s.io/pod.name), C(pod.namespace),
            C(pod.uid), C(serviceAccount.name) and C(ephemeral), as the kubelet's csi_mounter.go adds them.
        type: bool
        default: false
      secret_refs:
        description:
          - An external CSI driver's volume, its PV's secret references, each C(kind) to a C(namespace/name) with kind one of
            C(controller_publish), C(node_stage), C(node_publish), C(controller_expand), C(node_expand), as the
            planner builds them. C(kubevol.volumes.node_phases) reads those Secrets and fills in O(volumes[].secrets).
        type: dict
        default: {}
      secrets:
        description:
          - An external CSI driver's volume, the secrets of its CSI calls, each C(kind) to a mapping of keys to values, passed to the
            driver only, never in a result, log line, diff or error.
        type: dict
        default: {}
      controller_publish_context:
        description:
          - An external CSI driver whose Controller service runs on a host of the inventory (C(driver_options)
            C(controller) and C(controller_socket)), the C(publish_context) its ControllerPublishVolume answered on
            that host for this node. C(kubevol.volumes.node_phases) fills it in for the attach from the run's
            controller task (C(kubevol.volumes.csi_controller)); the attach keeps it for NodeStage and NodePublish.
        type: dict
      controller_host:
        description:
          - The controller host of such a volume, as the planner marks it (informational, the node reads
            C(driver_options)).
        type: str
      detached_first_from:
        description:
          - The nodes the same plan detaches this volume from before this attach (the planner fills it in; an RWO
            volume that follows its pod to this node).
          - Only check mode reads it. There nothing was detached, so the holds of these nodes on the volume's backing
            count as released, and the check passes what the real run will do after their teardown. A real run
            ignores it and still waits for each node's own detach.
        type: list
        elements: str
        default: []
      ephemeral:
        description:
          - An inline ephemeral CSI volume (C(pod.spec.volumes[].csi), volumeLifecycleMode C(Ephemeral)), as the
            planner builds it. O(volumes[].pv_name) is the pod's volume name, O(volumes[].pods) names exactly its one
            pod, and O(volumes[].volume_handle) must be C(csi-<sha256(pod uid + volume name)>).
          - M(kubevol.volumes.node_volume_mount) creates the backing volume (loop driver an image of
            O(volumes[].capacity_bytes) in the pool), attaches it, formats it only when blank and mounts it straight at
            the pod's C(mount) directory (no global mount). M(kubevol.volumes.volume_detach) unmounts it, detaches it
            and deletes the backing volume it created.
          - For an external CSI driver M(kubevol.volumes.node_volume_mount) writes C(vol_data.json) and calls
            NodePublishVolume (its plugin creates the volume) and M(kubevol.volumes.volume_detach) calls
            NodeUnpublishVolume (its plugin deletes it); an empty O(volumes[].fs_type) is sent as given.
        type: bool
        default: false
'''
