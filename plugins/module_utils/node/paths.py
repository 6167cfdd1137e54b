# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's own word on where a local or hostPath PV may point: only under the operator's allowed directories.

A PV's ``spec.local.path`` or ``spec.hostPath.path`` is written by whoever can create a PV; the node mounts, formats
or creates only what lies under ``driver_options[<plugin>].paths`` (common/driver_options.py), so a PV cannot make a
node bind-mount /etc or format /dev/vda. The check runs twice: on the path as written (absolute, normalized, under
a root) and on the path with every symlink resolved (os.path.realpath of the path and of the roots), so a symlink
inside an allowed directory that leads out of it is refused too. Everything after the check works on the resolved
path. The kubelet itself checks nothing of this (local.go, host_path.go trust the PV); kubevol, run by an operator
over SSH with root, does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import get_plugin


class PathNotAllowed(KubevolError):
    """A local or hostPath PV path the node refuses: nothing was created, formatted or mounted."""
    code = "KV-PATH-NOT-ALLOWED"
    message = ("refusing {kind} PV {volume} on node {node}: path {path} {reason}; fix the PV's path, or add its "
               "directory to the paths of {setting} (now {roots}) if the node may serve it")


def roots(ctx, plugin):
    """The allowed directories of ``plugin`` on this node (ctx.options_for, defaults merged)."""
    options_for = getattr(ctx, "options_for", None)
    found = options_for(plugin) if options_for is not None else driver_options.options_for({}, plugin)
    value = found.get("paths") or []
    # a string here would be iterated as characters, and "/" would allow everything: refused, never guessed
    if not isinstance(value, (list, tuple)) or not all(isinstance(root, str) for root in value):
        raise InvalidInput(field='driver_options["%s"].paths on node %s' % (plugin, ctx.node_name), value=value,
                           reason="must be a list of absolute directories (%s)" % setting("driver_options", key=plugin))
    return list(value)


def _refuse(ctx, item, roots_, reason, path=None):
    return PathNotAllowed(kind=get_plugin(item.plugin).KIND, volume=item.pv_name, node=ctx.node_name,
                          path=path or item.path, reason=reason, plugin=item.plugin,
                          roots=", ".join(roots_) if roots_ else "none (nothing is allowed)", step="check path",
                          setting=setting("driver_options", key=item.plugin))


def _under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve(ctx, item):
    """The path of ``item`` with its symlinks resolved, when it and its resolution lie under an allowed directory;
    raises PathNotAllowed otherwise. A path that does not exist yet resolves through its existing parents."""
    allowed = roots(ctx, item.plugin)
    if not driver_options.allowed(item.path, allowed):
        return_reason = ("is not absolute and normalized" if not driver_options.normalized(item.path)
                         else "is outside the allowed directories")
        raise _refuse(ctx, item, allowed, return_reason)
    real = os.path.realpath(item.path)
    real_roots = [os.path.realpath(root) for root in allowed if driver_options.normalized(root)]
    if not any(_under(real, root) for root in real_roots):
        raise _refuse(ctx, item, allowed, "resolves through a symlink to %s, outside the allowed directories" % real)
    return real
