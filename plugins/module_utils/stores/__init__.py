# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster store registry: ``get_store(source, **options)``.

``source`` is a module's ``cluster_source``; ``options`` are the store's module options
(``cluster_state`` for "file"). Options a store does not take must be None.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore

STORES = {
    "file": FileStore,
}
SOURCES = tuple(sorted(STORES))

# Shared argument_spec entries for the doc fragment kubevol.volumes.cluster_store.
CLUSTER_STORE_ARGSPEC = dict(
    cluster_source=dict(type="str", default="file", choices=list(SOURCES)),
    cluster_state=dict(type="path"),
)
CLUSTER_STORE_REQUIRED_IF = [("cluster_source", "file", ["cluster_state"])]


def store_options(params):
    """The store options out of a module's params."""
    return dict((key, params.get(key)) for key in CLUSTER_STORE_ARGSPEC if key != "cluster_source")


def get_store(source, **options):
    """Build the store named ``source`` from its options."""
    cls = STORES.get(source)
    if cls is None:
        raise InvalidInput(field="cluster_source", value=source,
                           reason="no such cluster store; known: %s" % ", ".join(SOURCES))
    return cls.from_options(**options)
