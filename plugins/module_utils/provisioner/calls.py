# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioner's calls on one host (module volume_provision_calls): each operation the plan gave this host, in
order, by its driver: CreateVolume or DeleteVolume over an external CSI driver's Controller service
(provisioner/external.py: its controller host's ``controller_socket``, or the node plugin's own with ``controller:
node``), or the loop driver's on this node's pool (provisioner/loop.py).

Each operation stands alone: one that fails is reported with its error and the host's other operations run. A
failure says whether the driver may have done it (``uncertain``: a non-final gRPC status): the run then records the
claim as still being provisioned, and the next run calls again with the same name. Snapshots (CreateSnapshot,
DeleteSnapshot: provisioner/snapshotter.py, provisioner/loop_snapshot.py) are more of the same: another ``op``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS, get_driver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.settings import driver_settings
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as node_options
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import loop, loop_snapshot
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.external import provisioner_class

OPS = ("create_volume", "delete_volume", "create_snapshot", "delete_snapshot")
# what a failed operation's message says first, when the driver's error does not say it already
WHAT = {"create_volume": "CreateVolume %(name)s for claim %(claim)s",
        "delete_volume": "DeleteVolume of PV %(pv_name)s",
        "create_snapshot": "CreateSnapshot %(name)s for VolumeSnapshot %(snapshot)s",
        "delete_snapshot": "DeleteSnapshot of VolumeSnapshotContent %(content_name)s"}


class UnknownOperation(InvalidInput):
    """An operation the provisioner's calls do not know (``op`` outside OPS): the reconcile role gives only those, so
    another one comes from a role and modules of different kubevol.volumes versions, or from a hand-made call. That
    operation is refused; the host's other operations run."""
    code = "KV-UNKNOWN-OPERATION"
    message = ("operation {position} of {count} on host {host}{subject} refused: unknown operation {value!r} "
               "(volume_provision_calls knows {known}); give one of those, or run the reconcile role with the "
               "modules of its own kubevol.volumes collection")


def _subject(op):
    """What an operation kubevol does not know names, said after its host: the claim, volume or snapshot it is for,
    and its driver (each only when given)."""
    named = ["%s %s" % (what, op[key]) for key, what in (("claim", "claim"), ("pv_name", "PV"), ("name", "volume"),
                                                         ("snapshot", "VolumeSnapshot"),
                                                         ("content_name", "VolumeSnapshotContent"), ("driver", "driver"))
             if op.get(key) is not None]
    return " (%s)" % ", ".join(named) if named else ""


def _loop_driver(runner, kubelet_dir, host, name, driver_options):
    settings = node_options.options_for(driver_options, name)
    settings["loop_pools"] = node_options.loop_pools(driver_options)
    # the pools, images, loop devices and holders it reads (provisioner/loop.py): the class itself, no node verbs
    return get_driver(name, driver_options=driver_options).reader(runner, kubelet_dir, host, settings)


def _external(runner, kubelet_dir, host, name, driver_options):
    driver = provisioner_class(name)(runner, kubelet_dir, host, driver_options)
    remote = driver_settings(name, driver_options or {})["remote"]
    if remote:
        driver.serve_controller_at(remote["socket"])  # its controller plugin, on this controller host
    return driver


def run_operation(runner, kubelet_dir, host, op, driver_options, secrets, check_mode):
    """One operation's result entry: {op, claim or pv_name, called, volume, topology_supported}."""
    name = op["driver"]
    if name in DRIVERS:
        driver = _loop_driver(runner, kubelet_dir, host, name, driver_options)
        if op["op"] == "create_volume":
            return loop.create_volume(driver, op, check_mode)
        if op["op"] == "delete_volume":
            return loop.delete_volume(driver, op, (op.get("volume_attributes") or {}).get("pool"), check_mode)
        return getattr(loop_snapshot, op["op"])(driver, op, check_mode)
    driver = _external(runner, kubelet_dir, host, name, driver_options)
    return getattr(driver, op["op"])(op, secrets, check_mode)


def run_operations(runner, kubelet_dir, host, operations, driver_options, secrets=None, check_mode=False):
    """(results, failures) of ``operations`` on host ``host``; ``secrets``: the I-th operation's secrets."""
    results, failures = [], []
    for position, op in enumerate(operations):
        entry = dict((key, op.get(key)) for key in ("op", "claim", "pv_name", "name", "volume_id", "driver",
                                                    "snapshot", "content_name")
                     if op.get(key) is not None)
        try:
            if op.get("op") not in OPS:
                raise UnknownOperation(field="op", value=op.get("op"), host=host, position=position + 1,
                                       count=len(operations), known=", ".join(OPS), subject=_subject(op))
            secret = (secrets or [])[position] if position < len(secrets or []) else None
            entry.update(run_operation(runner.for_volume(op.get("name") or op.get("pv_name")), kubelet_dir, host, op,
                                       driver_options, secret, check_mode))
            results.append(entry)
        except KubevolError as err:
            what = WHAT.get(op.get("op"))
            if what is not None and not err.text.startswith(what.split(" ")[0]):
                named = dict((key, op.get(key)) for key in ("name", "claim", "pv_name", "snapshot", "content_name"))
                err.add(prefix="%s on host %s (driver %s): " % (what % named, host, op.get("driver")))
            uncertain = bool(getattr(err, "uncertain", False))
            if uncertain and op.get("op") == "create_volume":
                # said here, in the host's own failure (the one message printed for it), not later by the report
                err.add(suffix="; the next run calls CreateVolume %s again with the same name, and the driver "
                        "answers with the volume it may have made, so no second volume is made" % op.get("name"))
            entry.update(msg=err.msg, uncertain=uncertain, code=err.code, grpc_code=err.kwargs.get("grpc_code"))
            failures.append(entry)
    return results, failures
