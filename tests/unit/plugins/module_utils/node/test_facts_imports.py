# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The facts module runs on every node in every run, and a node compiles each module it imports from Ansible's
payload again on every run (a zip caches no bytecode): gathering facts on a node with no external CSI driver
imports none of the external drivers' code (the CSI gRPC client, their records) and none of the code that changes
volumes (publish, stage, the ephemeral volumes' operations). Each check runs in a fresh interpreter, so that nothing
imported earlier hides an import."""
import json
import os
import subprocess
import sys

PREFIX = "ansible_collections.kubevol.volumes.plugins.module_utils."
CHANGING = {"node.ephemeral", "node.operations", "node.stage", "node.publish", "node.expand", "node.setup",
            "node.external_ephemeral"}


def facts_modules(tmp_path, driver_options):
    kubelet = tmp_path / "kubelet"
    (kubelet / "pods").mkdir(parents=True)
    code = (
        "import json, sys\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.node.facts import node_facts\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import process_runner\n"
        "ctx = NodeContext(process_runner(), node_name='node1', kubelet_dir=%r, run_dir=%r,\n"
        "                  driver_options=json.loads(%r))\n"
        "facts = node_facts(ctx, fs_sizes=False)\n"
        "assert facts['node_name'] == 'node1' and facts['reachable'], facts\n"
        "print(json.dumps([facts['csi_node_ids'], sorted(m for m in sys.modules if m.startswith(%r))]))\n"
        % (str(kubelet), str(tmp_path / "run"), json.dumps(driver_options), PREFIX))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env, check=False, timeout=60)
    assert out.returncode == 0, out.stderr
    ids, loaded = json.loads(out.stdout)
    return ids, set(m[len(PREFIX):] for m in loaded)


def test_facts_on_a_node_without_external_drivers_import_no_csi_client_and_no_changing_code(tmp_path):
    ids, loaded = facts_modules(tmp_path, {})
    assert ids == {}
    # the facts' own code was imported: the check below is about something real
    assert {"node.facts", "node.ephemeral_facts", "node.plugin_facts", "drivers.loop"} <= loaded, sorted(loaded)
    assert not [m for m in loaded if m == "csi" or m.startswith(("csi.", "drivers.external"))], sorted(loaded)
    assert "node.external_ops" not in loaded and not loaded & CHANGING, sorted(loaded)


def test_facts_import_the_csi_client_only_for_a_remote_controller_driver(tmp_path):
    """A driver whose Controller service runs on another host: its node id is asked for (NodeGetInfo) only where
    its node plugin has a socket; here none has, so the id is None, and the client's code is imported to look."""
    options = {"hostpath.csi.k8s.io": {"controller": "ctl", "controller_socket": str(tmp_path / "ctl.sock")}}
    ids, loaded = facts_modules(tmp_path, options)
    assert ids == {"hostpath.csi.k8s.io": None}
    assert "drivers.external.endpoint" in loaded and not loaded & CHANGING, sorted(loaded)
