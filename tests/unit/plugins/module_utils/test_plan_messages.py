# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's blocked and waiting reasons, and the settings it refuses, as an operator reads them: each family of
reasons is one sentence (what waits, where, what to do) that ends with its code, the code has its section in
docs/errors.md, and the why stays there (no Kubernetes source file named, no "nothing was ..." clause). One cluster per
family, planned without a node (node facts as data)."""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, pv, pvc, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common import words  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import SettingRefused  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.run.pod_wait import pod_states  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import build_actual_state  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import ClusterFileRefused  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.scope import select_pods  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
NOW = __import__("datetime").datetime(2026, 11, 22, 12, 0, 0, tzinfo=__import__("datetime").timezone.utc)
CODE_AT_END = re.compile(r" \[(KV-[A-Z][A-Z-]*[A-Z])\]$")
SOURCE_FILE = re.compile(r"\b[a-z_]+\.go\b")
NEW_SENTENCE = re.compile(r"[a-z0-9)\]'\"]\. +[A-Z]")  # a full stop inside the text, then a capital
LONG_AGO = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:00:00Z"}


def documented():
    with open(os.path.join(REPO, "docs", "errors.md"), encoding="utf-8") as handle:
        return set(re.findall(r"^## (KV-[A-Z-]+)$", handle.read(), re.M))


def run(data, node_facts=None, **options):
    opts = PlanOptions(options.get("force_detach", True), 360, ("loop.kubevol.io",), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def check(text, code=None):
    """One sentence ending with a documented code (``code`` when given), in the operator's words."""
    said = words.say(text, words.ROLE)
    found = CODE_AT_END.search(said)
    assert found, "no code at the end: %r" % said
    assert code is None or found.group(1) == code, said
    assert found.group(1) in documented(), "%s has no section in docs/errors.md" % found.group(1)
    assert "\n" not in said and not NEW_SENTENCE.search(said), "more than one sentence: %r" % said
    assert not SOURCE_FILE.search(said), "a Kubernetes source file in a message: %r" % said
    assert "nothing was" not in said.lower() and "nothing is" not in said.lower(), said
    assert "@{" not in said, said
    return said


def converged_node1(*pvs):
    return facts("node1", devices=pvs, global_mounts=pvs, pod_mounts=[("uid-ns-" + p, p) for p in pvs])


# (family, cluster, node facts, options, the code every blocked reason of the plan ends with)
FAMILIES = [
    ("claim missing", cluster(node("node1"), pod("ns/p", "node1", ["a"])), None, {}, "KV-CLAIM-UNBOUND"),
    ("claim not bound", cluster(node("node1"), pv("pv-a", claim="ns/a"), pvc("ns/a", "", phase="Pending"),
                                pod("ns/p", "node1", ["a"])), None, {}, "KV-CLAIM-UNBOUND"),
    ("PV bound elsewhere", cluster(node("node1"), pv("pv-a", claim="ns/a", uid="old"), pvc("ns/a", "pv-a"),
                                   pod("ns/p", "node1", ["a"])), None, {}, "KV-CLAIM-UNBOUND"),
    ("PV without claimRef", cluster(node("node1"), pv("pv-a"), pvc("ns/a", "pv-a"), pod("ns/p", "node1", ["a"])),
     None, {}, "KV-CLAIM-UNBOUND"),
    ("PV missing", cluster(node("node1"), pvc("ns/a", "pv-a"), pod("ns/p", "node1", ["a"])), None, {},
     "KV-PV-MISSING"),
    ("pod on a node the snapshot lacks", cluster(bound("pv-a", "ns/a"), pod("ns/p", "ghost", ["a"])), None, {},
     "KV-NODE-UNKNOWN"),
    ("node facts without a Node object", cluster(), {"node1": converged_node1("pv-a")}, {}, "KV-NODE-UNKNOWN"),
    ("node unreachable", cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"])),
     {"node1": facts("node1", reachable=False, error="ssh: timed out")}, {}, "KV-NODE-UNREACHABLE"),
    ("detach from an unreachable node", cluster(node("node1", ready=False, attached=[uvn("pv-a")]),
                                                bound("pv-a", "ns/a"), va("pv-a", "node1", annotations=LONG_AGO)),
     {"node1": facts("node1", reachable=False, error="ssh: timed out")}, {"force_detach": False},
     "KV-NODE-UNREACHABLE"),
    ("still mounted", cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                              va("pv-a", "node1")), None, {}, "KV-UNMOUNT-WAIT"),
    ("unmanaged node", cluster(node("node1", managed=False), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"])),
     None, {}, "KV-ATTACH-WAIT"),
    ("a name that escapes its directory", cluster(node("node1"), bound("../x", "ns/a"), pod("ns/p", "node1", ["a"])),
     None, {}, "KV-OBJECT-REFUSED"),
    ("volumeMode the pod does not use", cluster(node("node1"), bound("pv-a", "ns/a", mode="Block"),
                                                pod("ns/p", "node1", ["a"])), None, {}, "KV-OBJECT-REFUSED"),
    ("an fsType kubevol does not format", cluster(node("node1"), bound("pv-a", "ns/a", fs_type="vfat"),
                                                  pod("ns/p", "node1", ["a"])), None, {}, "KV-OBJECT-REFUSED"),
    ("Multi-Attach", cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("node2"),
                             bound("pv-a", "ns/a"), pod("ns/old", "node1", ["a"]), pod("ns/new", "node2", ["a"])),
     None, {}, "KV-MULTI-ATTACH"),
]


@pytest.mark.parametrize("family,data,node_facts,options,code", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_blocked_reason_is_one_sentence_ending_with_its_code(family, data, node_facts, options, code):
    result = run(data, node_facts, **options)
    assert result["blocked"], family
    for entry in result["blocked"]:
        check(entry["reason"], code)


@pytest.mark.parametrize("option,value,shown,variable", [
    ("max_wait_for_unmount", -1, "-1", "kubevol_max_wait_for_unmount"),
    ("max_teardown_fraction", 1.5, "1.5", "kubevol_max_teardown_fraction"),
    ("max_teardown_count", -2, "-2", "kubevol_max_teardown_count"),
    ("stage", "sometimes", "'sometimes'", "kubevol_stage"),
    ("loop_pools", ["relative"], "'relative'", 'kubevol_driver_options["loop.kubevol.io"]'),
])
def test_a_bad_setting_is_refused_in_the_readers_words(option, value, shown, variable):
    opts = PlanOptions(now=NOW)._replace(**{option: value})
    with pytest.raises(SettingRefused) as err:
        plan_cluster(ClusterIndex(cluster_from_data(cluster(node("node1")))), None, opts)
    said = check(err.value.msg, "KV-SETTING")
    assert said.startswith(variable) or said.startswith("the pools of " + variable), said
    assert " %s is refused: it must be" % shown in said, said
    assert "kubevol_" not in words.say(err.value.msg, words.MODULE)  # a module's caller reads its option


@pytest.mark.parametrize("expression", ["[?", "length(@)", "[?length(kind) > `3` && abs(kind)]"])
def test_a_bad_scope_is_refused_as_the_setting(expression):
    with pytest.raises(SettingRefused) as err:
        select_pods(cluster(node("node1")), expression)
    assert check(err.value.msg, "KV-SETTING").startswith("kubevol_scope %r is refused: it must " % expression)


def test_pod_wait_reasons_end_with_their_code():
    data = cluster(node("node1"), node("node2"), pvc("ns/a", "", phase="Pending"), pod("ns/p", "node1", ["a"]),
                   pod("ns/q", "node2", ["a"]))
    index = ClusterIndex(cluster_from_data(data))
    actual = build_actual_state(index, {"node1": facts("node1"),
                                        "node2": facts("node2", reachable=False, error="ssh: timed out")})
    plan = run(data, {"node1": facts("node1")})
    states = pod_states(index, plan, ["ns/p", "ns/q"], actual.node_facts, ("loop.kubevol.io",))
    by_pod = dict((s["pod"], s) for s in states)
    check(by_pod["ns/q"]["reason"], "KV-NODE-UNREACHABLE")
    [volume] = by_pod["ns/p"]["volumes"]
    assert volume["state"] == "waiting"
    check(volume["reason"], "KV-CLAIM-UNBOUND")


@pytest.mark.parametrize("text", [
    None,  # no file
    "",
    "error: You must be logged in to the server (Unauthorized)\n",
    '{"kind": "List", "items": [',
    "a: [\n",
    "- 1\n---\n3\n",
    "apiVersion: v1\nitems:\n- kind: Node\n  metadata: {name: node1}\n",
])
def test_a_cluster_file_that_is_no_whole_snapshot_is_refused_in_one_sentence(tmp_path, text):
    path = tmp_path / "cluster.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ClusterFileRefused) as err:
        FileStore(str(path)).load()
    said = check(err.value.msg, "KV-CLUSTER-FILE")
    assert str(path) in said and "kubectl" in said, said


def test_a_held_or_lost_run_lock_is_one_sentence_with_its_code():
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    held = run_lock.RunLocked(store="file /srv/cluster.yaml", since="2026-11-22T11:00:00Z", held_by="ctl-1-ab",
                              pid=42, host="ctl", renewed="2026-11-22T11:59:00Z", expires="2026-11-22T12:09:00Z",
                              waited=60)
    assert "kubevol_run_lock_timeout" in check(held.msg, "KV-RUN-LOCKED")
    lost = run_lock.RunLockLost(store="file /srv/cluster.yaml", holder="ctl-1-ab",
                                reason="run ctl-2-cd took it over at 2026-11-22T12:10:00Z")
    check(lost.msg, "KV-RUN-LOCKED")
