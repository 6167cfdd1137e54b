# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver and plugin options: one mapping {plugin-or-driver name: {option: value}} (driver_options).

Minimal version written for the planner (issue 26, contracts section 4): DEFAULTS, options_for and allowed. The
options work adds validate() and the module/role plumbing; its version replaces this file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import posixpath

DEFAULTS = {
    "loop.kubevol.io": {"pools": ["/var/lib/kubevol/pool"]},
    # local-static-provisioner's default discovery directory
    "kubernetes.io/local-volume": {"paths": ["/mnt/disks"]},
    # nothing is allowed until the operator says so
    "kubernetes.io/host-path": {"paths": []},
}


def options_for(driver_options, name):
    """The options of plugin or driver ``name``: DEFAULTS[name] with driver_options[name] merged over it per key."""
    merged = copy.deepcopy(DEFAULTS.get(name, {}))
    given = (driver_options or {}).get(name) or {}
    if isinstance(given, dict):
        merged.update(given)
    return merged


def allowed(path, roots):
    """Whether ``path`` is absolute, normalized (no '.', '..', '//', no trailing '/' except the root) and equal to or
    under one of ``roots`` (normalized the same way). A pure string check: the node checks again with realpath."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return False
    if path.startswith("//") or posixpath.normpath(path) != path:
        return False
    for root in roots or ():
        if not isinstance(root, str) or not root.startswith("/") or "\x00" in root:
            continue
        root = posixpath.normpath(root)
        if root == "//":
            root = "/"
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return True
    return False
