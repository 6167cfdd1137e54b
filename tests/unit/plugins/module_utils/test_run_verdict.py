# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-host truth (issue 37): whose each failure of a run is (run/run_verdict.py), what a node task says of its node
(node_phases' verdict), and where each node's phase results are kept for the record step (run/node_results.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.action import node_phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import node_results, run_verdict

HOSTS = ["node1", "node2", "node3"]


def summary(errors, failed_nodes, elsewhere=()):
    return {"errors": errors, "failed_nodes": failed_nodes, "failed_elsewhere": list(elsewhere)}


def test_each_failure_goes_to_its_own_host():
    errors = [{"node": "node2", "phase": "attach", "msg": "boom", "volumes": ["pv-a"]},
              {"node": "node3", "phase": "facts", "msg": "ssh: timed out"}]
    facts = {"node3": {"unreachable": True, "msg": "ssh: timed out"}}
    out = run_verdict.host_failures(summary(errors, {"node2": ["attach"], "node3": ["facts"]}), HOSTS,
                                    lambda host: host, facts.get)
    assert out == {"failed_hosts": {"node2": ["attach"]}, "unreachable_hosts": {"node3": ["facts"]},
                   "failed_elsewhere": []}
    # a facts module that failed (the node answered) is a failed host, not an unreachable one
    out = run_verdict.host_failures(summary(errors[1:], {"node3": ["facts"]}), HOSTS, lambda host: host,
                                    {"node3": {"failed": True, "msg": "no python"}}.get)
    assert out["failed_hosts"] == {"node3": ["facts"]} and out["unreachable_hosts"] == {}


def test_a_node_unreachable_in_a_node_task_and_a_host_named_otherwise():
    errors = [{"node": "k8s-b", "phase": "teardown", "msg": "gone", "volumes": [], "unreachable": True}]
    out = run_verdict.host_failures(summary(errors, {"k8s-b": ["teardown"]}), HOSTS,
                                    {"node1": "k8s-a", "node2": "k8s-b", "node3": "k8s-c"}.get)
    assert out["unreachable_hosts"] == {"node2": ["teardown"]} and out["failed_hosts"] == {}


def test_what_no_host_of_the_play_owns():
    """A node missing from the inventory, a controller host outside the play and the run's own record are no host's;
    a controller host in the play owns its controller calls; a node the --limit leaves out is not a failure."""
    outside = {"node": "node-x", "phase": "attach", "msg": "node node-x has work ... did not run it", "volumes": []}
    limited = {"node": "node4", "phase": "attach", "msg": "node node4 has work ... did not run it", "volumes": []}
    controller_in = {"node": "node1", "phase": "controller", "msg": "ctl boom", "volumes": ["pv-c"]}
    controller_out = {"node": "ctl9", "phase": "controller", "msg": "ctl9 unreachable", "volumes": ["pv-d"]}
    record = {"node": None, "phase": "record", "msg": "the records could not be written", "volumes": []}
    elsewhere = [outside, limited, controller_in, controller_out, record]
    out = run_verdict.host_failures(summary(elsewhere, {}, elsewhere), HOSTS, lambda host: host,
                                    inventory=HOSTS + ["node4", "ctl9"])
    assert out["failed_hosts"] == {"node1": ["controller"]}
    assert out["failed_elsewhere"] == [outside, controller_out, record]
    stopped = run_verdict.host_failures(None, HOSTS, lambda host: host, stopped="Plan the operations")
    assert [e["phase"] for e in stopped["failed_elsewhere"]] == ["controller step"]
    assert "'Plan the operations'" in stopped["failed_elsewhere"][0]["msg"]


def test_the_last_step_says_which_host_failed_once():
    report = {"failed_hosts": {"node2": ["attach"]}, "unreachable_hosts": {"node3": ["facts"]},
              "failed_elsewhere": [{"node": None, "msg": "x"}]}
    failed = run_verdict.verdict(report, "node2", "node2")
    assert failed["failed"] and failed["msg"].startswith("host node2 failed in this run (attach)")
    assert run_verdict.verdict(report, "node3", "k8s-c")["unreachable"] is True
    assert "host node3 (node k8s-c)" in run_verdict.verdict(report, "node3", "k8s-c")["msg"]
    # what failed elsewhere: nothing on an innocent host, unless no play on localhost follows and it is the first
    assert run_verdict.verdict(report, "node1", "node1") == {}
    pinned = run_verdict.verdict(report, "node1", "node1", pin_here=True)
    assert pinned["failed"] and "not on host node1" in pinned["msg"]
    check = run_verdict.verdict(dict(report, check_mode=True), "node2", "node2")
    assert "would fail" in check["msg"]


def test_localhost_is_in_the_run_only_when_the_limit_names_it(tmp_path):
    assert run_verdict.localhost_in_run(None) and run_verdict.localhost_in_run("")
    assert not run_verdict.localhost_in_run("node1,node2")
    assert run_verdict.localhost_in_run("node1:localhost")
    assert not run_verdict.localhost_in_run("all:!localhost")
    retry = tmp_path / "x.retry"
    retry.write_text("localhost\nnode2\n")
    assert run_verdict.localhost_in_run("@%s" % retry)
    retry.write_text("node2\n")
    assert not run_verdict.localhost_in_run("@%s" % retry)
    assert not run_verdict.localhost_in_run("@%s" % (tmp_path / "missing.retry"))


def test_the_node_task_fails_with_the_node_message_once():
    ok = {"attach": {"changed": True, "volumes": [{"pv_name": "a"}]}}
    assert node_phases.node_verdict(ok) == {} and node_phases.phase_status(ok) == {"attach": "ok"}
    setup = {"attach": {"failed": True, "msg": "1 of 1 volume(s) failed on node n2: boom", "volumes": [],
                        "failures": [{"unique_volume_name": "u", "msg": "volume a: boom"}]},
             "mount": {"failed": True, "msg": "1 of 1 volume(s) failed on node n2: boom", "volumes": []}}
    assert node_phases.node_verdict(setup) == {"failed": True, "msg": "1 of 1 volume(s) failed on node n2: boom"}
    gone = {"teardown": {"unreachable": True, "failed": True, "msg": "volume_detach: ssh: closed"}}
    assert node_phases.node_verdict(gone) == {"unreachable": True, "msg": "volume_detach: ssh: closed"}
    # a grow the node left pending is not a failure of the node
    pending = {"expand_node": {"failed": True, "msg": "waits", "failures": [{"unique_volume_name": "u",
                                                                            "pending": True, "msg": "waits"}]}}
    assert node_phases.node_verdict(pending) == {} and node_phases.phase_status(pending) == {"expand_node": "ok"}
    # a module that died without naming its volumes: the message names them
    died = node_phases._named({"failed": True, "msg": "Module result deserialization failed"},
                              [{"pv_name": "pv-a"}, {"pv_name": "pv-b"}, {"pv_name": "pv-a"}])
    assert died["msg"] == "Module result deserialization failed (volumes not done: pv-a, pv-b)"


def test_each_node_results_are_kept_for_the_record_step(tmp_path):
    local = str(tmp_path)
    kept = {"attach": {"changed": True, "volumes": [{"unique_volume_name": "u", "device_path": "/dev/loop1"}]}}
    path = node_results.save(local, "run-1", ["attach", "mount"], "node/../x", kept)
    assert path.startswith(local) and "/../" not in path[len(local):]  # a node name is never a path component
    results = {"node/../x": {"changed": True, "phase_results_kept": True}, "node2": None,
               "node3": {"phase_results_kept": True}}
    out = node_results.with_kept(results, local, "run-1", ["attach", "mount"])
    assert out["node/../x"]["phase_results"] == kept and out["node2"] is None
    assert "phase_results" not in out["node3"]  # nothing kept: the record step counts its work as not done
    # another run's or another task's results are never read
    assert "phase_results" not in node_results.with_kept(results, local, "run-2", ["attach", "mount"])["node/../x"]
    assert node_results.load(local, "run-1", ["teardown"], "node/../x") is None


def test_the_nodes_outside_the_run_are_one_failure_of_the_report():
    """At 5,000 nodes with three in the run, one entry for the nodes whose steps the run did not run, not one each;
    the summary's errors keep every one. Those the --limit leaves out (in the inventory) are no failure."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report

    outside = [{"node": "x%04d" % i, "phase": "attach", "msg": "did not run it", "volumes": []} for i in range(4997)]
    record = {"node": None, "phase": "record", "msg": "not written", "volumes": []}
    failed_nodes, elsewhere = run_report.split_failures(outside + [record], set(HOSTS))
    assert failed_nodes == {} and [e["phase"] for e in elsewhere] == ["record", "outside"]
    assert elsewhere[1]["msg"].startswith("4997 node(s) not in this run's hosts have steps it did not run (x0000, ")
    out = run_verdict.host_failures(summary([], {}, elsewhere), HOSTS, lambda host: host)
    assert out["failed_elsewhere"] == elsewhere
    # the limit left 4,000 of them out: the others stay, counted again
    limited = run_verdict.host_failures(summary([], {}, elsewhere), HOSTS, lambda host: host,
                                        inventory=["x%04d" % i for i in range(4000)])
    assert len(limited["failed_elsewhere"][1]["nodes"]) == 997
    assert limited["failed_elsewhere"][1]["msg"].startswith("997 node(s) not in this run's hosts")
    gone = run_verdict.host_failures(summary([], {}, elsewhere[1:]), HOSTS, lambda host: host,
                                     inventory=["x%04d" % i for i in range(4997)])
    assert gone["failed_elsewhere"] == []
    # a single one keeps its own message
    assert run_report.split_failures(outside[:1], set(HOSTS))[1] == outside[:1]


def test_every_host_of_a_task_keeps_its_results_at_once(tmp_path):
    """The task's hosts' workers save at the same time: the directory one of them makes is the others' too."""
    import threading

    errors = []

    def save(node):
        try:
            node_results.save(str(tmp_path), "run-1", ["teardown"], node, {"teardown": {"changed": False}})
        except Exception as err:  # pylint: disable=broad-except
            errors.append(err)

    threads = [threading.Thread(target=save, args=("node%d" % i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(node_results.load(str(tmp_path), "run-1", ["teardown"], "node%d" % i) for i in range(16))
