# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_phases' setup execution when a volume's Secret cannot be had: only that volume fails, in every phase it
had, and is sent to the node in none; the node's other volumes run and are counted done. The node module's
execution is the one function faked here (what it was sent, what it returned); tests/e2e/test_csi_external_inline.py
runs the same over SSH with a real CSI plugin."""
import base64

import yaml

from ansible_collections.kubevol.volumes.plugins.action.node_phases import ActionModule
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import _volume_outcomes
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of

DRIVER = "hostpath.csi.k8s.io"
SECRET_VALUE = "s3cr3t-value"


def item(pv, refs=None):
    return {"pv_name": pv, "driver": DRIVER, "volume_handle": "h-" + pv, "secret_refs": refs or {}}


def params(tmp_path):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "apps", "name": "stage"},
              "data": {"password": base64.b64encode(SECRET_VALUE.encode()).decode()}}
    state = tmp_path / "cluster.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "items": [secret], "kind": "List", "metadata": {}}))
    # the node's settings group, as node_phases checks it once (node_args.task_settings) before any module runs
    return {"settings": {"kubelet_dir": "/var/lib/kubelet", "lock_timeout": 30, "driver_options": {},
                         "command_timeout": 60, "long_command_timeout": 600},
            "provision": False, "controller_published": {},
            "cluster_store": {"cluster_source": "file", "cluster_state": str(state)}}


def action(calls):
    act = ActionModule.__new__(ActionModule)

    def execute(_task_vars, module, args):
        calls.append((module, args))
        return {"changed": True, "phase_results": dict(
            (phase, {"changed": True, "volumes": [{"pv_name": v["pv_name"], "unique_volume_name": unique_name_of(v)}
                                                  for v in args[phase]["volumes"]]})
            for phase in ("attach", "mount") if phase in args)}

    act._execute = execute
    return act


def test_a_volume_refused_for_its_secret_fails_alone_in_every_phase(tmp_path):
    good = item("pv-a", {"node_stage": "apps/stage"})
    bad_mount = item("pv-b", {"node_publish": "apps/missing"})
    calls = []
    results, ran = action(calls)._setup({"attach": [good, item("pv-b")], "mount": [good, bad_mount]}, "node1",
                                        params(tmp_path), {})
    assert ran == ["kubevol.volumes.__internal.node_volume_setup"] and len(calls) == 1
    sent = calls[0][1]
    # pv-b was refused in mount: it is attached in this run neither (it would be counted done there otherwise)
    assert [v["pv_name"] for v in sent["attach"]["volumes"]] == ["pv-a"]
    assert [v["pv_name"] for v in sent["mount"]["volumes"]] == ["pv-a"]
    assert sent["mount"]["volumes"][0]["secrets"] == {"node_stage": {"password": SECRET_VALUE}}
    for phase in ("attach", "mount"):
        outcomes, failed_msg = _volume_outcomes(results[phase])
        assert outcomes[unique_name_of(good)] is True, (phase, results[phase])
        assert "pv-b" in outcomes[unique_name_of(bad_mount)] and "apps/missing" in outcomes[unique_name_of(bad_mount)]
        assert "node1" in failed_msg and "does not exist" in failed_msg
        assert SECRET_VALUE not in repr(results[phase])


def test_nothing_runs_on_the_node_when_every_volume_is_refused(tmp_path):
    calls = []
    bad = item("pv-b", {"node_stage": "apps/missing"})
    results, ran = action(calls)._setup({"attach": [bad], "mount": [bad]}, "node1", params(tmp_path), {})
    assert calls == [] and ran == []
    for phase in ("attach", "mount"):
        outcomes, failed_msg = _volume_outcomes(results[phase])
        assert results[phase]["failed"] and "pv-b" in outcomes[unique_name_of(bad)], results[phase]
        assert "node_volume_setup on node node1 did not run 1 volume(s)" in failed_msg
