"""common/phases.py: the one phase table, and the one phase loop node_phases and node_volume_setup both run."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.setup import OPERATIONS
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import planner
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor


def test_the_table():
    assert phases.NAMES == ("teardown", "attach", "mount", "expand_controller", "expand_node")
    assert [p.order for p in phases.PHASES] == list(range(len(phases.PHASES)))
    assert phases.SETUP_PHASES == ("attach", "mount", "expand_controller", "expand_node")
    assert [p.name for p in phases.PHASES if p.teardown] == ["teardown"]
    assert dict((p.name, (p.module, p.module_args)) for p in phases.PHASES) == {
        "teardown": ("kubevol.volumes.volume_detach", {}),
        "attach": ("kubevol.volumes.k8s_volume_attach", {}),
        "mount": ("kubevol.volumes.node_volume_mount", {}),
        "expand_controller": ("kubevol.volumes.fs_expand", {"stage": "controller"}),
        "expand_node": ("kubevol.volumes.fs_expand", {"stage": "node"}),
    }
    # each step kind is run by exactly one phase
    assert len(phases.STEP_KINDS) == len(set(phases.STEP_KINDS)) == len(phases.KIND_PHASE)
    assert phases.TEARDOWN_KINDS == frozenset((("unmount", "pod"), ("unmount", "device"), ("detach", "device")))


def test_the_planner_emits_the_tables_step_kinds_in_its_order():
    # one meaning per name: the planner speaks of step kinds, in this table's order; PHASES are the node phases
    assert not hasattr(planner, "PHASES") and not hasattr(planner, "TEARDOWN")


def test_every_user_of_the_vocabulary_reads_the_table():
    assert set(OPERATIONS) == set(phases.SETUP_PHASES)  # node_volume_setup runs each setup phase
    assert set(node_args.setup_phase_specs()) == set(phases.SETUP_PHASES)
    assert node_args.node_phases_argspec()["phases"]["choices"] == ["facts"] + list(phases.NAMES)
    assert executor.run_tasks([])["sequence"] == []
    assert set(executor.PlanView({}).nodes_by_phase) == set(phases.NAMES)


@pytest.mark.parametrize("kind, name, order", [
    (("unmount", "pod"), "teardown", 0), (("cleanup", "directory"), "teardown", 0), (("attach", "device"), "attach", 1),
    (("mount", "pod"), "mount", 2), (("expand", "controller"), "expand_controller", 3),
    (("expand", "node"), "expand_node", 4), (("format", "device"), None, -1),
])
def test_phase_of_and_order_of(kind, name, order):
    assert phases.phase_of(kind) == name
    assert phases.order_of(kind) == order
    assert phases.step_kind({"action": kind[0], "target": kind[1]}) == kind


def test_in_order():
    assert phases.in_order(["expand_node", "attach", "mount", "attach"]) == ["attach", "mount", "expand_node"]
    with pytest.raises(ValueError) as err:
        phases.in_order(["attach", "format"])
    assert "format" in str(err.value) and "teardown" in str(err.value)


def test_run_in_order_runs_each_phase_with_work_in_order_and_carries_what_failed():
    ran = []
    failed = set()
    volumes = {"attach": ["a", "b"], "mount": ["a", "b"], "expand_node": ["b"], "expand_controller": []}

    def work(phase):
        return [v for v in volumes.get(phase, ()) if v not in failed]

    def run(phase, todo):
        ran.append((phase, list(todo)))
        if phase == "attach":
            failed.add("b")  # b's attach failed: not mounted, not grown
        return {"volumes": todo}

    results = phases.run_in_order(["expand_node", "mount", "attach", "expand_controller"], work, run)
    assert ran == [("attach", ["a", "b"]), ("mount", ["a"])]
    assert list(results) == ["attach", "mount"]


def test_run_in_order_stops_when_told():
    ran = []
    results = phases.run_in_order(phases.SETUP_PHASES, lambda phase: [1], lambda phase, todo: ran.append(phase) or {},
                                  stop=lambda phase, result: phase == "mount")
    assert ran == ["attach", "mount"] and list(results) == ["attach", "mount"]
