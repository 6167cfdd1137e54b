# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostPath volume plugin's node verbs (pkg/volume/hostpath/host_path.go SetUp, TearDown): what volume/host_path.py
HostPathPlugin is (and its checkType) stays there; this subclass adds what runs on the node, and the plugin names it by
its dotted path (NODE_OPERATIONS), so that planning a hostPath volume imports no node code."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount, paths, pod_binds
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.host_path import HostPathPlugin


class HostPathNode(HostPathPlugin):
    """kubernetes.io/host-path on the node."""

    @classmethod
    def node_setup(cls, ctx, item):
        """SetUp: the allowed-directory check, checkType, then one marker per pod; idempotent."""
        real = paths.resolve(ctx, item)
        res = pod_binds.result(item, path=real, host_path_type=item.host_path_type, created=None, published=[])
        cls.check_type(ctx, item, real, res)
        for pod in item.pods:
            marker = cls.pod_volume_dir(ctx.kubelet_dir, pod.uid, item.pv_name)
            if layout.check_dir(ctx.kubelet_dir, marker, ctx.node_name):
                continue
            act(ctx, res, "write marker %s" % marker, layout.ensure_dir, ctx.kubelet_dir, marker, ctx.node_name)
            res["published"].append(pod.uid)
            res["diff"]["before"][marker] = None
            res["diff"]["after"][marker] = "hostPath check passed"
        return res

    @classmethod
    def node_teardown(cls, ctx, item, force=False):
        """TearDown: nothing is mounted; remove the named pods' empty markers (never anything at the PV's path)."""
        runner = ctx.runner_for(item)
        res = pod_binds.result(item, device=None, unmounted=[], removed=[], detached=None)
        mounts = mount.list_mounts(runner)
        for pod in item.pods:
            marker = cls.pod_volume_dir(ctx.kubelet_dir, pod.uid, item.pv_name)
            if not layout.check_dir(ctx.kubelet_dir, marker, ctx.node_name):
                continue
            act(ctx, res, "remove marker %s" % marker)
            res["diff"]["before"][marker] = "hostPath check passed"
            res["diff"]["after"][marker] = None
            if ctx.check_mode:
                continue
            removed = [layout.rmdir_safe(marker, mounts)]
            removed += [layout.rmdir_safe(os.path.dirname(marker), mounts),
                        layout.rmdir_safe(os.path.dirname(os.path.dirname(marker)), mounts)]
            res["removed"] += [p for p in removed if p]
        return res
