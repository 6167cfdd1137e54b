# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A check-mode run's plan record keeps the nodes outside its hosts in outline (run/plan_record_parts.py): the run's
steps read back from the outline give exactly what they give from the whole record, over generated clusters, node
facts for some of the nodes and node task results that succeed, fail or do not answer; and no other reader takes an
outline for the whole plan."""

import json
import os
import shutil
import sys
import tempfile

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings, strategies as st, HealthCheck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_planner_properties import NODES, NOW, worlds  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.filter.plan_table import plan_table  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record, plan_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record_parts  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import reconcile_run_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import phase_items  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _defaults(spec):
    return dict((key, value.get("default")) for key, value in spec.items())


def _plan(state, node_facts, force, wait, local_tmp, record_dir=None):
    params = dict(_defaults(plan_task.argspec()), cluster_source="file", cluster_state=state, node_facts=node_facts,
                  known_drivers=["loop.kubevol.io"], force_detach=force, max_wait_for_unmount=wait, output="record",
                  record_dir=record_dir, inventory_hosts=list(node_facts), allow_mass_teardown=True)
    return plan_task.run(params, NOW, check_mode=True, local_tmp=local_tmp)


def _results(planned, task, outcomes):
    """{node: node_phases' result} of a node task in check mode, each host as ``outcomes`` says: every volume done,
    the first volume of each phase failed, or the host not answering."""
    results = {}
    for node, outcome in outcomes.items():
        if outcome == "unreachable":
            results[node] = {"unreachable": True, "msg": "node %s: ssh: connection refused" % node}
            continue
        share = plan_record.node_plan_of(planned, node)
        ran = {}
        for phase in task.get("phases") or ():
            items = phase_items(share, phase, node)
            if not items:
                continue
            volumes = [{"unique_volume_name": unique_name_of(item), "pv_name": item.get("pv_name")} for item in items]
            if outcome == "failed":
                ran[phase] = {"failed": True, "msg": "%s of %s failed" % (phase, volumes[0]["pv_name"]),
                              "volumes": volumes[1:], "failures": [dict(volumes[0], msg="it failed")]}
            else:
                ran[phase] = {"changed": True, "volumes": volumes}
        results[node] = {"changed": bool(ran), "phase_results": ran}
    return results


def _run_steps(planned, outcomes):
    """Every reconcile_run step of a check-mode run, as the role calls them, each step's result as JSON."""
    params = dict(_defaults(reconcile_run_task.argspec()), cluster_source="file", plan=planned, plan_shown=True)
    state = reconcile_run_task.run(params, check_mode=True)
    steps = [json.dumps(state, sort_keys=True)]
    for task in state.get("tasks") or ():
        state = reconcile_run_task.run(dict(params, after=task["name"], state=json.loads(steps[-1]),
                                            results=_results(planned, task, outcomes)), check_mode=True)
        steps.append(json.dumps(state, sort_keys=True))
    return steps


@SETTINGS
@given(worlds(), st.lists(st.sampled_from(NODES), min_size=1, max_size=2, unique=True),
       st.lists(st.sampled_from(["done", "done", "failed", "unreachable"]), min_size=2, max_size=2))
def test_the_run_reads_the_same_from_an_outline_as_from_the_whole_record(world, hosts, outcomes):
    data, node_facts, force, wait = world
    work = tempfile.mkdtemp(prefix="kubevol-outline-")
    try:
        state = os.path.join(work, "cluster.json")
        with open(state, "w") as handle:
            json.dump(data, handle)
        facts = dict((node, node_facts[node]) for node in hosts)
        whole = _plan(state, facts, force, wait, work, record_dir=os.path.join(work, "whole"))
        outlined = _plan(state, facts, force, wait, work)
        assert plan_record.manifest(outlined["record"])  # a record of its own, in the local temporary directory
        assert outlined["record"]["path"].startswith(os.path.join(work, "kubevol-plans"))
        by_host = dict(zip(hosts, outcomes))
        assert _run_steps(outlined, by_host) == _run_steps(whole, by_host)
        assert outlined["table"] == whole["table"] and outlined["counts"] == whole["counts"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "cluster.yaml")


@pytest.fixture
def example_plans(tmp_path):
    state = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(state))
    facts = {"node-1": {"node_name": "node-1", "reachable": True, "error": None, "devices": [], "global_mounts": [],
                        "pod_mounts": []}}
    whole = _plan(str(state), facts, False, 360, str(tmp_path), record_dir=str(tmp_path / "whole"))
    outlined = _plan(str(state), facts, False, 360, str(tmp_path))
    return whole, outlined


def test_an_outline_keeps_only_what_the_run_reads_of_the_other_nodes(example_plans):
    whole, outlined = example_plans
    full = plan_record.read_plan(whole["record"])
    back = plan_record.read_plan(outlined["record"], outline=True)
    others = [node for node in full["by_node"] if node != "node-1"]
    assert others, "the example cluster has work on nodes outside the run's host"
    assert back["outline"] is True and "outline" not in full
    assert back["by_node"] == full["by_node"] and len(back["plan"]) == len(full["plan"])
    for position, step in enumerate(full["plan"]):
        if step["node"] == "node-1":
            assert back["plan"][position] == step  # the run's host: whole
        else:
            assert back["plan"][position] == dict(
                (key, step.get(key)) for key in ("action", "target", "node", "volume", "pod", "unique_volume_name"))
    assert set(back["volume_items"]) == {"node-1"} & set(full["volume_items"])
    # the outside nodes' steps are read by no node task, but read_node still answers one of them, in outline
    assert plan_record.node_plan_of(outlined, others[0])["plan"] == [
        back["plan"][position] for position in back["by_node"][others[0]]]


def test_no_reader_takes_an_outline_for_the_whole_plan(example_plans):
    whole, outlined = example_plans
    with pytest.raises(KubevolError, match="check-mode run.*outline.*print the plan result's table"):
        plan_record.read_plan(outlined["record"])
    with pytest.raises(AnsibleFilterError, match="plan_table: plan record of run .* check-mode run"):
        plan_table(outlined)
    assert plan_table(whole)  # a check-mode record in a directory of the operator's is whole


def test_the_start_of_a_check_reads_the_rest_alone(example_plans):
    """The node tasks the plan needs are kept in the outline's rest: the check's start reads nothing else (here the
    other nodes' part is gone, and the start is still the whole record's); the later steps read the whole."""
    whole, outlined = example_plans
    os.remove(os.path.join(outlined["record"]["path"], plan_record.OTHERS_FILE))
    params = dict(_defaults(reconcile_run_task.argspec()), cluster_source="file", plan=outlined, plan_shown=True)
    started = reconcile_run_task.run(params, check_mode=True)
    assert started["tasks"], "the example's plan has node tasks"
    assert json.dumps(started, sort_keys=True) == _run_steps(whole, {"node-1": "done"})[0]
    with pytest.raises(KubevolError, match="cannot read .*others.marshal"):
        plan_record.read_plan(outlined["record"], outline=True)


def test_an_outline_part_changed_or_unreadable_is_refused(example_plans):
    """The other nodes' part is read back only as this run wrote it: a part changed under the record fails its sha256
    check, and one that does not read back (here rewritten with a digest to match, as no writer of the record would)
    is refused by name, never taken as the outline."""
    _whole, outlined = example_plans
    record = outlined["record"]
    others = os.path.join(record["path"], plan_record.OTHERS_FILE)
    with open(others, "rb") as handle:
        written = handle.read()
    with open(others, "wb") as handle:
        handle.write(written[:-1] + bytes([written[-1] ^ 1]))
    with pytest.raises(KubevolError, match="others.marshal is not the one this run wrote"):
        plan_record.read_plan(record, outline=True)
    for garbled in (b"not marshal", plan_record.marshal.dumps({"a": 1})):
        with open(others, "wb") as handle:
            handle.write(garbled)
        path = os.path.join(record["path"], plan_record.MANIFEST)
        with open(path) as handle:
            manifest = json.load(handle)
        manifest["others"]["digest"] = plan_record_parts._digest(garbled)
        data = plan_record_parts._dumps(manifest)
        with open(path, "wb") as handle:
            handle.write(data)
        with pytest.raises(KubevolError, match="others.marshal cannot be read"):
            plan_record.read_plan(dict(record, digest=plan_record_parts._digest(data)), outline=True)


def test_an_outline_with_a_value_marshal_does_not_take_is_kept_in_json(tmp_path):
    """A value of a type of its own in the other nodes' steps (a str subclass, as Ansible's templating hands a string
    on): the part is written in JSON instead, and reads back the same."""
    class Tagged(str):
        pass

    steps = [{"action": "attach", "target": "device", "node": "far", "volume": Tagged("pv-c"), "pod": None,
              "unique_volume_name": "kubernetes.io/csi/csi.example.com^c"},
             {"action": "attach", "target": "device", "node": "node-1", "volume": "pv-d", "pod": None,
              "unique_volume_name": "kubernetes.io/csi/csi.example.com^d"}]
    result = {"plan": steps, "volume_items": {}}
    handle = plan_record.write(result, str(tmp_path / "plans"), nodes=["node-1"], outline=True)
    assert sorted(os.listdir(handle["path"])) == sorted(["manifest.json", "plan.json", "nodes", "others.json"])
    back = plan_record.read_plan(handle, outline=True)
    assert [(s["node"], s["volume"]) for s in back["plan"]] == [("far", "pv-c"), ("node-1", "pv-d")]


def test_a_host_reads_the_same_share_and_a_node_the_controller_acts_for_stays_whole(example_plans):
    """The outline changes nothing a node task reads (its host's share is the whole record's), and a node outside the
    run that the controller acts for (a record-only release, a controller host's call) keeps its steps and items."""
    whole, outlined = example_plans
    assert plan_record.node_plan_of(outlined, "node-1") == plan_record.node_plan_of(whole, "node-1")
    item = {"pv_name": "pv-a", "driver": "csi.example.com", "volume_handle": "a"}
    steps = [{"action": "detach", "target": "device", "node": "gone", "volume": "pv-a", "pod": None,
              "unique_volume_name": "kubernetes.io/csi/csi.example.com^a", "record_only": True},
             {"action": "attach", "target": "device", "node": "far", "volume": "pv-b", "pod": None,
              "unique_volume_name": "kubernetes.io/csi/csi.example.com^b", "controller_host": "ctl"},
             {"action": "attach", "target": "device", "node": "plain", "volume": "pv-c", "pod": None,
              "unique_volume_name": "kubernetes.io/csi/csi.example.com^c", "reason": "the pod needs it"}]
    result = {"plan": steps, "volume_items": dict((s["node"], {s["unique_volume_name"]: item}) for s in steps)}
    rest, shares = plan_record_parts.split(result, hosts=["node-1"], outline=True)
    others = dict((node, share) for node, share in rest["_record"]["others"])
    assert others["gone"]["plan"] == steps[:1] and others["far"]["plan"] == steps[1:2]
    assert others["gone"]["items"] and others["far"]["items"]
    assert others["plain"] == {"at": [2], "cells": ["attach", "device", "pv-c", None,
                                                    "kubernetes.io/csi/csi.example.com^c"]}
    assert shares == [("node-1", None)]
