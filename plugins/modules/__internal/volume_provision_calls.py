#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: volume_provision_calls
short_description: Internal - CreateVolume, DeleteVolume, CreateSnapshot and DeleteSnapshot where a CSI controller runs
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - C(kubevol.volumes.volume_provision) runs it, with the operations it cut from the run's plan and the Secrets it
    read, on each host that provisions or deletes volumes.
  - For an external CSI driver, CreateVolume, DeleteVolume, CreateSnapshot or DeleteSnapshot over its Controller
    service's socket (the controller host's C(controller_socket), or the node plugin's own with C(controller=node)),
    as the external-provisioner and the external-snapshotter make them; for kubevol's loop driver, the image (or
    the snapshot's sparse copy) made in or removed from this node's pool.
  - Each operation stands alone; a failure names the claim or the PV, the driver and the host.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.internal
  - kubevol.volumes.internal.controller_calls
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
  - kubevol.volumes.driver_options.loop_pools
options:
  host:
    description: This host's inventory name, for the messages.
    type: str
    required: true
  operations:
    description:
      - The operations, in order, as the reconcile's plan holds them (RV(kubevol.volumes.volume_reconcile_plan#module:provisioning),
        RV(kubevol.volumes.volume_reconcile_plan#module:deletions)); C(op) is V(create_volume), V(delete_volume),
        V(create_snapshot) or V(delete_snapshot).
    type: list
    elements: dict
    required: true
  secrets:
    description: The I-th operation's secrets (a mapping of key to value), read from the Secret its StorageClass or PV names.
    type: list
    elements: dict
    default: []
'''

EXAMPLES = r'''
- name: Make a claim's volume on node1 (what kubevol.volumes.volume_provision runs there)
  kubevol.volumes.__internal.volume_provision_calls:
    host: node1
    operations:
      - op: create_volume
        driver: loop.kubevol.io
        claim: shop/db
        name: pvc-3f1c
        request: {capacity_bytes: 1073741824, access_modes: [ReadWriteOnce], volume_mode: Filesystem, fs_type: xfs,
                  mount_flags: [], parameters: {}, accessibility_requirements: null, content_source: null}
'''

RETURN = r'''
operations:
  description: "One entry per operation done: C({op, claim, name, pv_name, volume_id, driver, called, volume,
    topology_supported}); C(volume) is CreateVolume's answer (volume_id, capacity_bytes, volume_context,
    accessible_topology); a snapshot's call has C(snapshot) (the VolumeSnapshot), C(content_name) and C(taken)
    (CreateSnapshot's answer: snapshot_id, size_bytes, creation_time, ready_to_use)."
  returned: always
  type: list
  elements: dict
failures:
  description: "One entry per operation that failed: C({op, claim, name, pv_name, driver, msg, uncertain, code,
    grpc_code}); C(uncertain) true when the driver may have done it (a non-final gRPC status); C(code) the C(KV-...)
    code the message ends with; C(grpc_code) the gRPC status the driver answered, null when no call was answered."
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import module as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
