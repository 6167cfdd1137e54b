"""A kubectl JSON List above cluster/load_split.py's size threshold, planned ad hoc through the real ansible command:
the action plugin's worker forks the child that reads the List's second part, and the plan is the one this process
makes reading the file alone."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
NODES = 6000


def _write_cluster(path):
    sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
    from simulate import bound, cluster, node, pod
    objects = []
    for n in range(NODES):
        name = "node%05d" % n
        objects.append(node(name, attached=[]))
        for p in range(2):
            claim = "c%05d-%d" % (n, p)
            objects.extend(bound("pv-" + claim, "ns/" + claim))
            objects.append(pod("ns/pod-" + claim, name, [claim]))
    data = cluster(*objects)
    for obj in data["items"]:
        obj["apiVersion"] = "v1"  # kubectl writes it first in every item
    with open(path, "w") as handle:
        json.dump(data, handle, indent=4, sort_keys=True)  # as kubectl prints it


def test_a_list_above_the_threshold_plans_as_one_process_reads_it(tmp_path, monkeypatch):
    from ansible_collections.kubevol.volumes.plugins.module_utils.cluster import load_split
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
    path = str(tmp_path / "cluster.json")
    _write_cluster(path)
    assert os.path.getsize(path) > 2 * load_split.SPLIT_MIN_CHARS
    # the ansible command below reads in two processes only where two CPUs are usable, as CI's machines have
    assert load_split.usable_cpus() >= 2, "this test needs two usable CPUs"
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_NOCOLOR="1")
    res = subprocess.run([ANSIBLE, "localhost", "-m", "kubevol.volumes.volume_reconcile_plan", "-a",
                          json.dumps({"cluster_state": path, "output": "summary"})],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                         timeout=300, check=False)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    text = res.stdout[res.stdout.index("localhost | "):]
    adhoc = json.JSONDecoder().raw_decode(text[text.index(" => ") + 4:])[0]
    monkeypatch.setattr(load_split, "usable_cpus", lambda: 1)
    params = dict((key, value.get("default")) for key, value in plan_task.argspec().items())
    params.update(cluster_state=path, output="summary")
    alone = plan_task.run(params, utc_now())
    assert adhoc["summary"] == alone["summary"] and adhoc["summary"]["attach"] == 2 * NODES, adhoc["summary"]
    assert adhoc["table"] == alone["table"] and adhoc["summary"]["blocked"] == 0
