# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster store interface: where kubevol reads the cluster's facts and records what it did.

A store hands out the cluster as one raw Kubernetes List (what
``kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml`` prints) and applies
records (record.py) to it atomically. FileStore (file.py) keeps the List in a file; a store
backed by the live API will provide the same three methods.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.errors import KubevolError, LockTimeout


def empty_list():
    return {"apiVersion": "v1", "kind": "List", "items": []}


class StoreError(KubevolError):
    message = "cluster store {store}: {reason}"


class StoreLockTimeout(LockTimeout):
    message = ("cluster store {store} is locked by another kubevol run (lock file {lock}); waited {timeout}s; "
               "retry when that run ends (the lock is released when its process exits)")


class MissingLibrary(KubevolError):
    """A Python library the store needs is not installed; msg is Ansible's missing_required_lib text."""

    def __init__(self, library, reason, import_error=None):
        try:
            from ansible.module_utils.basic import missing_required_lib
            text = missing_required_lib(library, reason=reason)
        except ImportError:  # pragma: no cover - ansible is always there in practice
            text = "Failed to import the required Python library (%s): it is needed %s" % (library, reason)
        kwargs = {"library": library}
        if import_error:
            kwargs["exception"] = import_error
        super(MissingLibrary, self).__init__(text, **kwargs)


class ClusterStore:
    """What every store provides. Stores raise KubevolError subclasses that say what to check."""

    source = None

    def load(self):
        """Return the cluster as a raw List dict: {"apiVersion": "v1", "kind": "List", "items": [...]}.

        Items are Node, Pod, PersistentVolume, PersistentVolumeClaim, VolumeAttachment and CSIDriver
        objects; other kinds are kept and ignored.
        """
        raise NotImplementedError

    def apply(self, records, check_mode=False):
        """Apply records (record.py) all or nothing; return {changed, changes, diff}.

        ``changes`` lists one summary per record that changed something; ``diff`` is
        {before, after} of the changed objects keyed "Kind/[namespace/]name". In check mode the
        same result is computed and nothing is written.
        """
        raise NotImplementedError

    def describe(self):
        """A short human description, e.g. "file /srv/cluster.yaml"."""
        raise NotImplementedError

    def __repr__(self):
        return "<%s %s>" % (type(self).__name__, self.describe())
