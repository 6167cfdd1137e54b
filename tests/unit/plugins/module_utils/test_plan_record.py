# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan as a record (issue 30): written by the plan task, read back by handle by reconcile_run, the node tasks
(node_plan, node_phases) and plan_table; never the plan in the task result."""

import json
import os
import shutil
import time

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevol.volumes.plugins.filter.plan_table import plan_table
from ansible_collections.kubevol.volumes.plugins.filter.reconcile import node_plan
from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record, reconcile_run_task
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import node_slice

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")


def params(path, **kw):
    base = dict((key, spec.get("default")) for key, spec in plan_task.argspec().items())
    base.update(cluster_source="file", cluster_state=str(path), known_drivers=["loop.kubevol.io"])
    base.update(kw)
    return base


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "state" / "cluster.yaml"
    path.parent.mkdir()
    shutil.copy(EXAMPLE, str(path))
    return path


def test_record_result_carries_a_handle_not_the_plan_and_reads_back_whole(state, tmp_path):
    full = plan_task.run(params(state), utc_now())
    recorded = plan_task.run(params(state, output="record", table_rows=2, table_hint="more rows: raise it"),
                             utc_now(), local_tmp=str(tmp_path / "local"))
    assert "plan" not in recorded and "volume_items" not in recorded and "by_node" not in recorded
    handle = recorded["record"]
    # beside the state file, outside check mode
    assert os.path.dirname(handle["path"]) == str(state) + ".plans" and handle["path"].endswith(handle["run_id"])
    assert recorded["counts"] == {"steps": len(full["plan"]), "blocked": 0, "pending": 0,
                                  "nodes": len(full["by_node"]), "provisioning": 0, "deletions": 0}
    assert recorded["summary"] == full["summary"]
    assert recorded["table"][-1] == plan_table(full).splitlines()[-1]
    assert any("not shown (more rows: raise it)" in line for line in recorded["table"])
    back = plan_record.read_plan(handle)
    assert back["plan"] == full["plan"] and back["volume_items"] == full["volume_items"]
    assert plan_table(recorded) == plan_table(full)  # the public filter reads the record by handle
    assert len(json.dumps(recorded)) < 4000  # what Ansible's variables carry
    assert not os.path.exists(str(tmp_path / "local"))


def test_each_node_reads_only_its_share(state):
    full = plan_task.run(params(state), utc_now())
    recorded = plan_task.run(params(state, output="record"), utc_now())
    for node in full["by_node"]:
        assert node_plan(recorded, node) == node_slice(full, node)
    assert node_plan(recorded, "node-without-work") == {"plan": [], "volume_items": {}}
    files = sorted(os.listdir(os.path.join(recorded["record"]["path"], "nodes")))
    assert files == sorted("n-%s.json" % node for node in full["by_node"])


def test_check_mode_writes_nothing_beside_the_state(state, tmp_path):
    recorded = plan_task.run(params(state, output="record"), utc_now(), check_mode=True, local_tmp=str(tmp_path / "tmp"))
    assert recorded["record"]["path"].startswith(str(tmp_path / "tmp" / "kubevol-plans") + os.sep)
    assert os.listdir(str(state.parent)) == ["cluster.yaml"]
    explicit = plan_task.run(params(state, output="record", record_dir=str(tmp_path / "mine")), utc_now(), check_mode=True)
    assert os.path.dirname(explicit["record"]["path"]) == str(tmp_path / "mine")


def test_reconcile_run_reads_the_plan_by_handle_as_it_took_the_plan(state, tmp_path):
    full = plan_task.run(params(state), utc_now())
    recorded = plan_task.run(params(state, output="record"), utc_now())
    run_params = dict((key, spec.get("default")) for key, spec in reconcile_run_task.argspec().items())
    run_params.update(cluster_state=str(state))
    by_value = reconcile_run_task.run(dict(run_params, plan=full), check_mode=True)
    by_handle = reconcile_run_task.run(dict(run_params, plan=recorded), check_mode=True)
    assert by_handle == by_value and [task["name"] for task in by_handle["tasks"]]


def test_a_changed_or_foreign_record_is_refused(state):
    recorded = plan_task.run(params(state, output="record"), utc_now())
    handle = recorded["record"]
    with pytest.raises(KubevolError, match="not the one this run wrote") as refused:
        plan_record.read_plan(dict(handle, digest="0" * 64))
    # its code ends the message once: docs/errors.md says why the run stops there and what to do
    assert refused.value.code == "KV-PLAN-RECORD" and refused.value.msg.endswith(" [KV-PLAN-RECORD]")
    assert refused.value.msg.count("[KV-") == 1
    node = sorted(plan_record.manifest(handle)["nodes"])[0]
    with open(os.path.join(handle["path"], "nodes", "n-%s.json" % node), "a") as stream:
        stream.write(" ")
    with pytest.raises(AnsibleFilterError, match="node %s: plan record of run %s: nodes/n-%s.json is not the one"
                       % (node, handle["run_id"], node)):
        node_plan(recorded, node)
    with pytest.raises(KubevolError, match="not a plan record handle"):
        plan_record.read_plan({"path": handle["path"]})
    shutil.rmtree(handle["path"])
    with pytest.raises(KubevolError, match="cannot read .*run the reconcile again"):
        plan_record.read_plan(handle)


def test_records_are_pruned_to_the_newest_and_nothing_else_is_touched(tmp_path):
    directory = str(tmp_path / "plans")
    os.makedirs(os.path.join(directory, "notes"))
    os.makedirs(os.path.join(directory, "20200101T000000Z-0000000a"))  # no manifest: not a record of ours
    stale = os.path.join(directory, ".20200101T000000Z-0000000b.x1")
    os.makedirs(stale)
    os.utime(stale, (0, 0))
    fresh = os.path.join(directory, ".20990101T000000Z-0000000c.x2")  # a writer still at work
    os.makedirs(fresh)
    handles = [plan_record.write({"plan": [], "volume_items": {}}, directory,
                                 "2026112%dT000000Z-0000000%d" % (i, i)) for i in range(1, 5)]
    assert sorted(os.listdir(directory)) == sorted([
        "notes", "20200101T000000Z-0000000a", ".20990101T000000Z-0000000c.x2",
        handles[2]["run_id"], handles[3]["run_id"]])
    assert plan_record.read_plan(handles[3]) == {"plan": [], "volume_items": {}}


def test_node_names_never_leave_the_record(tmp_path):
    plan = {"plan": [{"node": "../../escape", "action": "mount"}, {"node": "a/b", "action": "mount"}],
            "volume_items": {}, "by_node": {"../../escape": [0], "a/b": [1]}}
    handle = plan_record.write(plan, str(tmp_path / "plans"))
    assert sorted(os.listdir(os.path.join(handle["path"], "nodes"))) == ["n-..%2F..%2Fescape.json", "n-a%2Fb.json"]
    assert plan_record.read_node(handle, "../../escape")["plan"] == [plan["plan"][0]]
    assert sorted(os.listdir(str(tmp_path))) == ["plans"]


def test_an_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(KubevolError, match="cannot create %s" % blocker) as err:
        plan_record.write({"plan": []}, str(blocker / "plans"))
    assert "or set kubevol_plan_record_dir to a directory" in words.say(err.value.msg, words.ROLE)  # the role's user


def test_only_the_runs_hosts_get_a_file_and_the_others_are_cut_from_the_plan(state):
    full = plan_task.run(params(state), utc_now())
    nodes = sorted(full["by_node"])
    handle = plan_record.write(full, str(state) + ".plans", nodes=nodes[:1] + ["node-not-planned"])
    assert os.listdir(os.path.join(handle["path"], "nodes")) == ["n-%s.json" % nodes[0]]
    for node in nodes:
        assert plan_record.read_node(handle, node) == node_slice(full, node)
    assert plan_record.read_node(handle, "node-not-planned") == {"plan": [], "volume_items": {}}


def test_a_run_still_going_keeps_its_record_whatever_other_runs_write(tmp_path):
    """Sliced runs write into one directory at once: an unfinished record younger than UNFINISHED_SECONDS is never
    pruned by another run's write; once finished (the run's last step) it goes like any other old record."""
    directory = str(tmp_path / "plans")
    now = time.time()
    ids = [plan_record.new_run_id(now - 60 + i) for i in range(4)]
    handles = [plan_record.write({"plan": [], "volume_items": {}}, directory, run_id) for run_id in ids]
    assert sorted(os.listdir(directory)) == sorted(ids)  # all four runs still going: none pruned
    for handle in handles[:3]:
        plan_record.finish(handle)
    plan_record.prune(directory, current=ids[3], now=now)
    assert sorted(os.listdir(directory)) == sorted(ids[2:])  # the newest finished one stays beside the current
    old = plan_record.new_run_id(now - plan_record.UNFINISHED_SECONDS - 10)  # a killed run's record, long ago
    plan_record.write({"plan": [], "volume_items": {}}, directory, old)
    newer = plan_record.write({"plan": [], "volume_items": {}}, directory, plan_record.new_run_id(now))
    plan_record.finish(newer)
    plan_record.prune(directory, current=ids[3], now=now)
    assert sorted(os.listdir(directory)) == sorted([ids[3], newer["run_id"]])  # the killed run's record is gone


def test_the_runs_last_step_marks_its_record_finished(state, tmp_path):
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.reconcile_run_task import run as run_step
    handle = plan_record.write({"plan": [], "volume_items": {}, "blocked": [], "summary": {}, "node_errors": {}},
                               str(tmp_path / "plans"))
    assert not os.path.exists(os.path.join(handle["path"], plan_record.FINISHED))
    out = run_step({"plan": {"record": handle}, "after": "plan", "state": None, "results": None, "plan_shown": True,
                    "run_lock": None, "cluster_source": "file", "cluster_state": state})
    assert "summary" in out and os.path.exists(os.path.join(handle["path"], plan_record.FINISHED))


def test_where_the_record_goes_for_each_store_and_mode():
    """plan_task.record_dir: the API store's record is ConfigMaps in the run lock's namespace (run/plan_record_k8s.py),
    outside check mode only; a given directory wins; check mode keeps it on the controller."""
    base = dict((key, spec.get("default")) for key, spec in plan_task.argspec().items())
    k8s = dict(base, cluster_source="kubernetes")
    assert plan_task.record_dir(k8s, False, "/tmp/local") == "k8s:kube-system"
    assert plan_task.record_dir(dict(k8s, run_lock={"lease_namespace": "kubevol"}), False, "/tmp/l") == "k8s:kubevol"
    assert plan_task.record_dir(dict(k8s, run_lock={"skipped": True}), False, "/tmp/l") == "k8s:kube-system"
    assert plan_task.record_dir(k8s, True, "/tmp/local") == "/tmp/local/kubevol-plans"
    assert plan_task.record_dir(dict(k8s, record_dir="/srv/plans"), False, "/tmp/local") == "/srv/plans"
    assert plan_task.record_dir(dict(k8s, cluster={"items": []}), False, "/tmp/local") == "/tmp/local/kubevol-plans"


def test_a_record_in_the_api_needs_the_connection_options():
    handle = {"path": "k8s:kube-system/20261125T232600Z-1a2b3c4d", "run_id": "20261125T232600Z-1a2b3c4d",
              "digest": "0" * 64}
    with pytest.raises(KubevolError, match="plan record k8s:kube-system/20261125T232600Z-1a2b3c4d: it is kept in the "
                                           "Kubernetes API.*kubevol_k8s_auth"):
        plan_record.read_node(handle, "node1")
    with pytest.raises(AnsibleFilterError, match="node_plan: node node1: plan record k8s:kube-system/"):
        node_plan({"record": handle}, "node1")
    plan_record.finish(handle)  # no options: nothing marked, nothing raised (pruning takes it after 12 hours)


def test_store_options_merge_the_play_group_defaults_under_the_task_own():
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import with_group_defaults
    defaults = [{"group/kubevol.volumes.cluster_store": {"host": "{{ url }}", "api_key": "play"}},
                {"kubevol.volumes.reconcile_run": {"api_key": "not-for-this-task"}}]

    def template(value):
        return dict((k, v.replace("{{ url }}", "https://api")) for k, v in value.items())

    assert with_group_defaults({"cluster_source": "kubernetes", "api_key": "role"}, defaults, template) == {
        "host": "https://api", "api_key": "role", "cluster_source": "kubernetes"}
    assert with_group_defaults(None, [], template) is None
    assert with_group_defaults({}, None, template) == {}


def test_every_part_of_the_plan_is_written_once_and_read_back_whole(state):
    """run/plan_record_parts.py: a host's share is in its own file only, the other nodes' in the rest (plan.json),
    never both; the desired and actual states keep their counts, not their per-node lists, which no later step
    reads."""
    full = plan_task.run(params(state), utc_now())
    nodes = sorted(full["by_node"])
    handle = plan_record.write(full, str(state) + ".plans", nodes=nodes[:1])
    with open(os.path.join(handle["path"], "plan.json")) as stream:
        rest = json.load(stream)
    assert not set(rest) & {"plan", "volume_items", "by_node"}
    assert "per_node" not in rest["desired"] and rest["desired"]["pods"] == full["desired"]["pods"]
    assert "per_node" not in rest["actual"]
    assert sorted(node for node, _share in rest["_record"]["others"]) == nodes[1:]
    with open(os.path.join(handle["path"], "nodes", "n-%s.json" % nodes[0])) as stream:
        assert json.load(stream)["plan"] == node_slice(full, nodes[0])["plan"]
    back = plan_record.read_plan(handle)
    assert back == recorded(full)


def recorded(plan):
    """What a record keeps of a plan result: the desired and actual states without their per_node lists."""
    return dict((key, dict((k, v) for k, v in value.items() if k != "per_node") if key in ("desired", "actual")
                 else value) for key, value in plan.items())


def test_split_and_assemble_keep_every_step_in_its_place():
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record_parts as parts
    plan = {"plan": [{"node": "b", "action": "detach"}, {"node": None, "action": "expand"},
                     {"node": "a", "action": "attach"}, {"node": "b", "action": "attach"}],
            "volume_items": {"a": {"u1": {"pv_name": "p1"}}, "c": {"u2": {"pv_name": "p2"}}},
            "by_node": {"b": [0, 3], None: [1], "a": [2]}, "blocked": [{"node": "d"}],
            "desired": {"pods": 1, "per_node": {"a": ["p1"]}}}
    rest, shares = parts.split(plan, hosts=["a", "host-without-work"])
    assert dict(shares) == {"a": {"at": [2], "plan": [plan["plan"][2]], "items": {"u1": {"pv_name": "p1"}}},
                            "host-without-work": None}
    assert sorted(str(node) for node, _share in rest["_record"]["others"]) == ["None", "b", "c"]
    assert parts.assemble(rest, shares) == dict(plan, desired={"pods": 1})
    assert parts.other_share(rest, "c") == {"plan": [], "volume_items": {"c": {"u2": {"pv_name": "p2"}}}}
    assert parts.node_view("host-without-work", None) == {"plan": [], "volume_items": {}}


def test_a_record_of_the_older_layout_is_refused(state):
    handle = plan_record.write({"plan": [], "volume_items": {}}, str(state) + ".plans")
    path = os.path.join(handle["path"], plan_record.MANIFEST)
    with open(path) as stream:
        found = json.load(stream)
    found["version"] = 1
    data = json.dumps(found).encode()
    with open(path, "wb") as stream:
        stream.write(data)
    import hashlib
    with pytest.raises(KubevolError, match="written by another version or run"):
        plan_record.read_plan(dict(handle, digest=hashlib.sha256(data).hexdigest()))
