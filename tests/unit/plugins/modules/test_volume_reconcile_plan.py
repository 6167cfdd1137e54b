# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.filter.plan_table import plan_table
from ansible_collections.kubevol.volumes.plugins.module_utils import plan_task
from ansible_collections.kubevol.volumes.plugins.module_utils.planner import utc_now

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")
MODULE = os.path.join(REPO, "plugins", "modules", "volume_reconcile_plan.py")


def params(**kw):
    base = dict(cluster_state=None, cluster=None, node_facts=None, force_detach=True, max_wait_for_unmount=360,
                known_drivers=["loop.kubevol.io"], scope=None, max_teardown_fraction=0.5, max_teardown_count=20,
                allow_mass_teardown=False)
    base.update(kw)
    return base


def test_run_on_example():
    result = plan_task.run(params(cluster_state=EXAMPLE), utc_now())
    assert result["changed"] is False
    assert result["summary"]["attach"] == 4 and result["summary"]["mount"] == 8 and result["blocked"] == []
    table = plan_table(result)
    assert table.splitlines()[-1] == "Plan: 0 to unmount, 0 to detach, 4 to attach, 8 to mount, 0 to expand; 0 blocked"


def test_run_with_scope():
    result = plan_task.run(params(cluster_state=EXAMPLE, scope="[?metadata.namespace=='tools']"), utc_now())
    assert set(s["volume"] for s in result["plan"]) == {"pv-shared-logs"}


def _invoke(args):
    env = dict(os.environ, ANSIBLE_MODULE_ARGS=json.dumps(args))
    proc = subprocess.run([sys.executable, MODULE], input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("args,text", [
    ({"cluster_state": "/nonexistent.yaml"}, "cannot read the cluster state file"),
    ({"cluster": {"kind": "List", "items": [{"kind": "PersistentVolume", "metadata": {"name": "pv-x"},
                                             "spec": {"capacity": {"storage": "1GB"}}}]}}, "pv-x"),
    ({}, "one of the following is required"),
    ({"cluster": {"kind": "List", "items": []}, "scope": "[?"}, "invalid scope: '[?': Invalid jmespath expression"),
])
def test_bad_input_fails_cleanly(args, text):
    out = _invoke(args)
    assert out.get("failed") and text in out["msg"] and "Traceback" not in json.dumps(out)


def test_table_lists_blocked():
    result = {"plan": [], "blocked": [{"node": "n", "volume": "v", "pod": None, "reason": "why"}]}
    lines = plan_table(result).splitlines()
    assert "No changes" in lines[0] and "Blocked:" in lines and lines[-1].endswith("; 1 blocked")


def test_known_drivers_unset_means_the_driver_registry():
    from ansible_collections.kubevol.volumes.plugins.module_utils.desired_state import DEFAULT_KNOWN_DRIVERS
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS
    assert "default" not in plan_task.argspec()["known_drivers"]
    assert DEFAULT_KNOWN_DRIVERS == tuple(sorted(DRIVERS))
    unset = plan_task.run(params(cluster_state=EXAMPLE, known_drivers=None), utc_now())
    assert unset["summary"] == plan_task.run(params(cluster_state=EXAMPLE), utc_now())["summary"]
    none_known = plan_task.run(params(cluster_state=EXAMPLE, known_drivers=[]), utc_now())
    assert none_known["plan"] == [] and none_known["desired"]["foreign_volumes"] > 0
