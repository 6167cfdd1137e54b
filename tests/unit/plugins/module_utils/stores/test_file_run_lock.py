# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FileStore's run lock: a record beside the state file, waited for, taken over when stale, renewed while a run
lasts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import time

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore


# -- the run lock: a record beside the state file ----------------------------------------------------------
def test_run_lock_waits_names_the_holder_and_takes_over_stale_locks(tmp_path):
    import os
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": []}')
    store = FileStore(str(path))
    me = run_lock.owner(os.getpid())
    assert store.acquire_run_lock("run-a", 60, 0, who=me)["location"] == str(path) + ".run-lock"
    slept = []
    with pytest.raises(run_lock.RunLocked) as err:
        store.acquire_run_lock("run-b", 60, 3, who=me, sleep=slept.append, clock=iter([0, 1, 2, 3]).__next__)
    assert slept == [1.0, 1.0] and "holder run-a, pid %d, host %s" % (os.getpid(), me["host"]) in err.value.msg
    assert "holder" not in err.value.to_result()  # a failed acquire never looks like a lock of its own
    assert "waited 3s" in err.value.msg
    with pytest.raises(run_lock.RunLockLost):
        store.renew_run_lock("run-b", 60)
    assert store.release_run_lock("run-a") and not os.path.exists(str(path) + ".run-lock")
    # a holder whose process is gone on this host, or whose lock expired, is taken over
    store.acquire_run_lock("killed", 60, 0, who={"host": me["host"], "pid": 2 ** 22 + 7, "pid_start": 1})
    assert "is gone" in store.acquire_run_lock("next", 60, 0, who=me)["took_over"]["reason"]
    store.release_run_lock("next")

    def past():
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    store.acquire_run_lock("elsewhere", 60, 0, who={"host": "other-host", "pid": 1, "pid_start": 1}, now=past)
    assert "expired" in store.acquire_run_lock("next", 60, 0, who=me)["took_over"]["reason"]


def test_a_lock_renewed_moments_ago_is_not_written_again(tmp_path):
    """Every host of a run renews the lock while its node task runs: a renewal within fresh_for of the last one writes
    nothing (one write per interval, not one per host), a later one does, and a lost lock is still refused."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": []}')
    store = FileStore(str(path))
    me = run_lock.owner(os.getpid())
    start = datetime.datetime(2026, 11, 24, 3, 0, 0, tzinfo=datetime.timezone.utc)
    store.acquire_run_lock("run-a", 60, 0, who=me, now=lambda: start)
    lock_file = str(path) + ".run-lock"

    def written():
        return os.stat(lock_file).st_ino, open(lock_file).read()
    before = written()
    store.renew_run_lock("run-a", 60, now=lambda: start + datetime.timedelta(seconds=9), fresh_for=10)
    assert written() == before  # renewed 9 s ago: fresh, left as it is
    store.renew_run_lock("run-a", 60, now=lambda: start + datetime.timedelta(seconds=11), fresh_for=10)
    assert written() != before and '"renewed": "2026-11-24T03:00:11.000000Z"' in written()[1]
    with pytest.raises(run_lock.RunLockLost):
        store.renew_run_lock("run-b", 60, now=lambda: start + datetime.timedelta(seconds=12), fresh_for=10)
    # a clock stepped back: the lock seems renewed in the future, and is renewed again rather than trusted
    store.renew_run_lock("run-a", 60, now=lambda: start, fresh_for=10)
    assert '"renewed": "2026-11-24T03:00:00.000000Z"' in written()[1]


def test_the_run_lock_is_kept_renewed_while_a_node_task_runs(tmp_path):
    """node_phases wraps its node work in kept_renewed: a task longer than the lock's duration keeps it, a second
    run is still refused at the end; renewals stop with the task; a lost lock is a warning, not a failure."""
    import json as _json
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import kept_renewed
    path = tmp_path / "cluster.json"
    path.write_text('{"kind": "List", "items": []}')
    store = FileStore(str(path))
    me = run_lock.owner(os.getpid())
    store.acquire_run_lock("run-a", 2, 0, who=me)
    lock = {"holder": "run-a", "duration": 2}
    warnings = []

    def renewed():
        with open(str(path) + ".run-lock") as handle:
            return _json.load(handle)["renewed"]

    with kept_renewed({"cluster_source": "file", "cluster_state": str(path)}, lock, warnings):
        time.sleep(3.2)  # longer than the lock's 2 s
        with pytest.raises(run_lock.RunLocked):  # not expired: renewed every 2/3 s
            store.acquire_run_lock("run-b", 2, 0, who=me)
    assert warnings == []
    last = renewed()
    time.sleep(1.2)
    assert renewed() == last  # the renewals ended with the task
    # a lock lost while the task runs: a warning, the task goes on, no more renewals
    store.release_run_lock("run-a")
    with kept_renewed({"cluster_source": "file", "cluster_state": str(path)}, lock, warnings):
        time.sleep(1.0)
    assert len(warnings) == 1 and "could not be renewed" in warnings[0] and "gone" in warnings[0], warnings
    # nothing to renew without a lock or a store; bad store options are a warning
    with kept_renewed({}, lock, warnings), kept_renewed({"cluster_source": "file"}, None, warnings):
        pass
    with kept_renewed({"cluster_source": "nfs", "cluster_state": str(path)}, lock, warnings):
        pass
    assert len(warnings) == 2 and "not renewed" in warnings[1] and "cluster_source" in warnings[1], warnings
