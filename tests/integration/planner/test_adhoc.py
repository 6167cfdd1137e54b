"""volume_reconcile_plan run ad hoc through the real ansible command: an action plugin that plans in the
controller's process, reads a relative cluster_state from the directory the command runs in, and fails
cleanly on bad input."""
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")


def adhoc(cwd, args):
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_NOCOLOR="1")
    res = subprocess.run([ANSIBLE, "localhost", "-m", "kubevol.volumes.volume_reconcile_plan",
                          "-a", json.dumps(args)],
                         cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=120, check=False)
    # the default callback: "localhost | SUCCESS => {...}"
    assert "localhost | " in res.stdout, res.stdout + res.stderr
    text = res.stdout[res.stdout.index("localhost | "):]
    return res.returncode, json.JSONDecoder().raw_decode(text[text.index(" => ") + 4:])[0]


def test_relative_cluster_state_is_read_from_the_working_directory(tmp_path):
    shutil.copy(os.path.join(REPO, "examples", "cluster.yaml"), str(tmp_path / "snapshot.yaml"))
    rc, result = adhoc(tmp_path, {"cluster_state": "snapshot.yaml"})
    assert rc == 0 and not result.get("failed"), result
    assert result["changed"] is False
    assert result["summary"]["attach"] == 4 and result["summary"]["mount"] == 9
    # the lean plan: every step's volume item is in items, once per node and volume
    for step in result["plan"]:
        assert step["unique_volume_name"] in result["volume_items"][step["node"]]
        assert step in [result["plan"][i] for i in result["by_node"][step["node"]]]


def test_bad_input_fails_cleanly(tmp_path):
    rc, result = adhoc(tmp_path, {"cluster_state": "missing.yaml"})
    assert rc != 0 and "cannot read the cluster state file" in result["msg"]
    assert "missing.yaml" in result["msg"] and "Traceback" not in json.dumps(result)
    rc, result = adhoc(tmp_path, {"cluster": {"kind": 5, "items": []}})
    assert rc != 0 and result["msg"] == "invalid cluster kind: 5: must be a string: List, or an object's kind", result
    rc, result = adhoc(tmp_path, {"cluster_source": "kubernetes", "cluster_state": "a.yaml"})
    assert rc != 0 and "cluster_state" in result["msg"] and "does not apply" in result["msg"], result


def test_given_data_wins_over_the_store_options(tmp_path):
    # as with a play's module_defaults for group/kubevol.volumes.cluster_store, which name a file or the API
    for store in ({"cluster_state": "missing.yaml"}, {"cluster_source": "kubernetes", "host": "https://127.0.0.1:1"}):
        rc, result = adhoc(tmp_path, dict(store, cluster={"kind": "List", "items": []}, output="summary"))
        assert rc == 0 and result["summary"]["attach"] == 0, result


def test_kubectl_json_plans_as_its_yaml(tmp_path):
    import yaml
    with open(os.path.join(REPO, "examples", "cluster.yaml")) as handle:
        documents = [d for d in yaml.safe_load_all(handle) if d]
    (tmp_path / "cluster.json").write_text(json.dumps(documents[0] if len(documents) == 1 else
                                                      {"kind": "List", "items": documents}, indent=4))
    shutil.copy(os.path.join(REPO, "examples", "cluster.yaml"), str(tmp_path / "cluster.yaml"))
    results = [adhoc(tmp_path, {"cluster_state": name, "output": "full"}) for name in ("cluster.json", "cluster.yaml")]
    assert results[0][0] == results[1][0] == 0
    assert results[0][1]["summary"]["attach"] == 4 and results[0][1]["plan"] == results[1][1]["plan"]


def adhoc_raw(cwd, args):
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_NOCOLOR="1")
    return subprocess.run([ANSIBLE, "localhost", "-m", "kubevol.volumes.volume_reconcile_plan", "-a", args],
                          cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, check=False)


def test_output_table_prints_readable_lines(tmp_path):
    shutil.copy(os.path.join(REPO, "examples", "cluster.yaml"), str(tmp_path / "cluster.yaml"))
    res = adhoc_raw(tmp_path, "cluster_state=cluster.yaml output=table")
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.JSONDecoder().raw_decode(res.stdout[res.stdout.index(" => ") + 4:])[0]
    assert sorted(result) == ["changed", "summary", "table"]
    assert result["table"][0].split() == ["ACTION", "NODE", "VOLUME", "POD", "REASON"]
    assert result["table"][-1] == "Plan: 0 to unmount, 0 to detach, 4 to attach, 9 to mount, 0 to expand; 0 blocked"
    assert len(res.stdout.splitlines()) < 40


def test_a_big_plan_ad_hoc_prints_pages_not_megabytes(tmp_path):
    """2000 nodes with 2 pods of one claim each: 12000 steps. The full result is megabytes of JSON; the table
    and the summary stay small, and the table says how many more steps there are."""
    sys.path.insert(0, os.path.join(REPO, "tests", "unit"))
    from simulate import bound, cluster, node, pod
    objects = []
    for n in range(2000):
        name = "node%04d" % n
        objects.append(node(name))
        for p in range(2):
            claim = "c%04d-%d" % (n, p)
            objects.extend(bound("pv-" + claim, "ns/" + claim))
            objects.append(pod("ns/pod-" + claim, name, [claim]))
    with open(str(tmp_path / "big.json"), "w") as handle:
        json.dump(cluster(*objects), handle)
    full = adhoc_raw(tmp_path, "cluster_state=big.json")
    table = adhoc_raw(tmp_path, "cluster_state=big.json output=table")
    summary = adhoc_raw(tmp_path, "cluster_state=big.json output=summary table_rows=20")
    for res in (full, table, summary):
        assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert len(full.stdout) > 4 * 10 ** 6, len(full.stdout)  # what an ad-hoc run printed before
    print("ad-hoc output bytes: full %d, table %d, summary %d" % (len(full.stdout), len(table.stdout), len(summary.stdout)))
    assert len(table.stdout) < 40 * 1000 and len(summary.stdout) < 10 * 1000, (len(table.stdout), len(summary.stdout))
    assert "... and 11900 more steps not shown" in table.stdout
    assert "... and 1980 more nodes not shown" in summary.stdout
    assert "Plan: 0 to unmount, 0 to detach, 4000 to attach, 8000 to mount, 0 to expand; 0 blocked" in table.stdout
