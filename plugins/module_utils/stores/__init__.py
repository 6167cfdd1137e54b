# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster store registry: ``get_store(source, **options)``.

``source`` is a module's ``cluster_source``; ``options`` are the store's module options
(``cluster_state`` for "file"; the k8s_auth options and ``page_size`` for "kubernetes"). Options a
store does not take must be None; options left at their argspec default are not passed on.

The stores are behind one interface (base.py ``ClusterStore``): they read the cluster, apply the records
(records/) and keep the run lock, whose record and rules are theirs too (run_lock.py), as client-go holds the
leader election below the controllers that run it. stores/ imports records/ and common/ only: the run (run/) takes
the lock and writes through a store, never the reverse.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_auth import K8S_AUTH_ARGSPEC
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import DEFAULT_PAGE_SIZE
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore


def _kubernetes_store():
    # imported when first used: it imports the kubernetes client, a heavy import (docs/performance.md) that a run on
    # a cluster file never needs (tests/unit/test_layout.py INNER_IMPORTS_ALLOWED)
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore
    return KubernetesStore


# source -> a function returning the store class
STORES = {
    "file": lambda: FileStore,
    "kubernetes": _kubernetes_store,
}
SOURCES = tuple(sorted(STORES))

# Shared argument_spec entries for the doc fragments kubevol.volumes.cluster_store and
# kubevol.volumes.k8s_auth (the kubernetes.core option names, aliases and no_log).
CLUSTER_STORE_ARGSPEC = dict(
    cluster_source=dict(type="str", default="file", choices=list(SOURCES)),
    cluster_state=dict(type="path"),
    page_size=dict(type="int", default=DEFAULT_PAGE_SIZE),
)
CLUSTER_STORE_ARGSPEC.update(K8S_AUTH_ARGSPEC)
CLUSTER_STORE_REQUIRED_IF = [("cluster_source", "file", ["cluster_state"])]


def store_options(params):
    """The store options out of a module's params; an option left at its default is not passed on."""
    options = {}
    for key, spec in CLUSTER_STORE_ARGSPEC.items():
        if key == "cluster_source":
            continue
        value = params.get(key)
        if "default" in spec and value == spec["default"]:
            value = None
        options[key] = value
    return options


GROUP_DEFAULTS = "group/kubevol.volumes.cluster_store"


def with_group_defaults(cluster_store, module_defaults, template):
    """The store options of a task that takes them as one dict (node_phases' and csi_controller's ``cluster_store``:
    they are not in the cluster_store action group, whose options are top-level): the play's module_defaults for
    group/kubevol.volumes.cluster_store (``module_defaults``: the task's list of entries, each value templated by
    ``template``), then ``cluster_store`` over them, as the group's modules get them. None when neither says
    anything."""
    merged = {}
    for entry in module_defaults or ():
        defaults = entry.get(GROUP_DEFAULTS) if isinstance(entry, dict) else None
        if defaults:
            defaults = template(defaults)
            if isinstance(defaults, dict):
                merged.update(defaults)
    if isinstance(cluster_store, dict):
        merged.update(cluster_store)
    return merged or cluster_store


def get_store(source, **options):
    """Build the store named ``source`` from its options."""
    store_class = STORES.get(source)
    if store_class is None:
        raise InvalidInput(field="cluster_source", value=source,
                           reason="no such cluster store; known: %s" % ", ".join(SOURCES))
    return store_class().from_options(**options)
