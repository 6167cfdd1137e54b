# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the volume plugins and CSI drivers: one mapping {plugin-or-driver name: {option: value}}.

MINIMAL version (plugins-node work of issue 26): the "options" engineer's module replaces it; only DEFAULTS,
options_for and allowed are used by node code. Pure: no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import posixpath

LOCAL_VOLUME = "kubernetes.io/local-volume"
HOST_PATH = "kubernetes.io/host-path"

DEFAULTS = {
    "loop.kubevol.io": {"pools": ["/var/lib/kubevol/pool"]},
    # local-static-provisioner's default discovery directory
    LOCAL_VOLUME: {"paths": ["/mnt/disks"]},
    # nothing allowed until the operator says so
    HOST_PATH: {"paths": []},
}


def options_for(driver_options, name):
    """The options of plugin or driver ``name``: its defaults, overridden key by key by ``driver_options``."""
    merged = copy.deepcopy(DEFAULTS.get(name, {}))
    merged.update(copy.deepcopy((driver_options or {}).get(name) or {}))
    return merged


def normalized(path):
    """True for an absolute path in normal form: no '.' or '..' component, no '//', no trailing '/' (but '/')."""
    return (isinstance(path, str) and path.startswith("/") and "\x00" not in path
            and (path == "/" or posixpath.normpath(path) == path) and not path.startswith("//"))


def allowed(path, roots):
    """The root of ``roots`` that ``path`` is (or lies under), by string only (the plan-time check), else None."""
    if not normalized(path):
        return None
    for root in roots or ():
        if not normalized(root):
            continue
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None
