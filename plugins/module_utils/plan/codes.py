# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The codes the planner's blocked and waiting reasons end with (``[KV-...]``), one per family of reasons an
operator meets more than once; docs/errors.md explains each under its code. A reason is one sentence: what waits
or is refused, where (node, volume, claim, pod) and what to do; the why is in docs/errors.md."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CLAIM_UNBOUND = "KV-CLAIM-UNBOUND"      # a pod's claim is missing, not bound, or bound elsewhere
PV_MISSING = "KV-PV-MISSING"            # the PV a claim is bound to is not in the snapshot
NODE_UNKNOWN = "KV-NODE-UNKNOWN"        # a node the snapshot has no Node object for
NODE_UNREACHABLE = "KV-NODE-UNREACHABLE"  # a node this run cannot reach (its facts failed)
OBJECT_REFUSED = "KV-OBJECT-REFUSED"    # a PV, claim, pod or CSIDriver field a node would refuse
NODE_AFFINITY = "KV-NODE-AFFINITY"      # the pod's node is outside the PV's nodeAffinity
ATTACH_WAIT = "KV-ATTACH-WAIT"          # an attach waits: an unmanaged node, a multi-attach volume's first node
UNMOUNT_WAIT = "KV-UNMOUNT-WAIT"        # a detach waits for a node to unmount the volume
VOLUME_LIMIT = "KV-VOLUME-LIMIT"        # the node's CSINode allocatable count is reached
EXPANSION = "KV-EXPANSION"              # a claim's expansion no plugin can make, or one marked infeasible
STAGE_WAIT = "KV-STAGE-WAIT"            # a node stage's step waits for the attach/detach stage's
UNIDENTIFIED = "KV-UNIDENTIFIED"        # a mount or directory on a node that kubevol cannot name, left alone
# a setting's value kubevol cannot use: common/errors.py SettingRefused (KV-SETTING)


def coded(text, code):
    """``text`` ending with its code, once."""
    mark = "[%s]" % code
    return text if text.endswith(mark) else "%s %s" % (text, mark)


def unreachable_text(node, error):
    """Why a step of ``node`` waits when this run could not gather its facts (one text for all its steps, so that
    the plan table shows it once per volume)."""
    return "node %s is unreachable (%s): make it reachable and run again [%s]" % (node, error, NODE_UNREACHABLE)
