# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A cluster state file read into the model: the file store's parser (stores/file.py) feeding cluster/objects.py's
builders. Apart from the model itself, so that the pure planner, which imports the model, never imports a store
(tests/unit/test_layout.py): only the run's plan task and the benches read a file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load_split import SplitRead
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    MalformedObject, cluster_from_objects, gc_paused, iter_items)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore, NotStreamable


def load_cluster_file(path, keep_list=True):
    """Read a List file (JSON or YAML; a YAML file cut short is refused: stores/file_text.py) into a Cluster; also
    returns the raw List.

    The text is read by the file store (stores/file.py), the one parser of cluster state files.
    ``keep_list=False``: the raw List is not wanted (None is returned for it), so kubectl's JSON List is read
    object by object (FileStore.stream_items) and each object is dropped once its model object is built, so the
    parsed List is never whole in memory (the cost it saves: docs/performance.md, "Why the code is shaped so"). Any
    other file, or one the builders refuse, is parsed whole as before, so the errors are the same on both paths. A big
    List's second part is read by a child process meanwhile (cluster/load_split.py), when a second CPU is there.
    """
    with gc_paused():
        store = FileStore(path)
        text = store.read_text()
        if not keep_list:
            split = SplitRead.start(text)
            try:
                return _streamed(store, text, split), None
            except (NotStreamable, MalformedObject):
                pass  # what was built is dropped; the whole-text parse below accepts or names the problem
            finally:
                if split is not None:
                    split.close()
        data = store.parse(text)[0]
        return cluster_from_objects(iter_items(data)), data


def _streamed(store, text, split):
    cluster = cluster_from_objects(store.stream_items(text, split))
    return split.merged(cluster) if split is not None else cluster
