"""phases.task_modules: the node modules a node task runs, as node_phases executes them; the run's start builds their
payloads ahead (plugin_utils/payloads.py)."""
from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor


def test_the_modules_a_node_task_runs_are_those_node_phases_executes():
    """phases.task_modules: one node_volume_setup for several setup phases (what node_phases executes, and what the
    run's start has built ahead), each other phase's own module; a task of one setup phase runs that phase's module."""
    assert phases.task_modules(["attach", "mount", "expand_controller", "expand_node"]) == [phases.SETUP_MODULE]
    assert phases.task_modules(["mount"]) == ["kubevol.volumes.node_volume_mount"]
    assert phases.task_modules(["teardown"]) == ["kubevol.volumes.volume_detach"]
    assert phases.task_modules(["expand_node"]) == ["kubevol.volumes.fs_expand"]
    assert phases.task_modules([]) == []
    for task in executor.run_tasks([{"action": "detach", "target": "device", "node": "a"},
                                    {"action": "attach", "target": "device", "node": "b"},
                                    {"action": "mount", "target": "device", "node": "b"}])["sequence"]:
        assert phases.task_modules(task["phases"]), task


def test_the_setup_module_is_wanted_only_where_a_node_may_have_work_in_two_setup_phases():
    """The plan task keeps its build of node_volume_setup only for a plan some node will run it for (the summary
    counts steps per action over every node: it may keep a build no node uses, never drop one a node uses)."""
    assert phases.setup_module_wanted({"attach": 2, "mount": 4, "detach": 0})
    assert phases.setup_module_wanted({"mount": 1, "expand": 1})
    assert not phases.setup_module_wanted({"unmount": 3, "detach": 3, "attach": 0, "mount": 0})
    assert not phases.setup_module_wanted({"mount": 5, "unmount": 1})
    assert not phases.setup_module_wanted({"expand": 2})
    assert not phases.setup_module_wanted(None)
    plan = [{"action": "attach", "target": "device", "node": "b"}, {"action": "mount", "target": "device", "node": "b"}]
    setup = [task for task in executor.run_tasks(plan)["sequence"] if phases.SETUP_MODULE in
             phases.task_modules(task["phases"])]
    assert setup and phases.setup_module_wanted({"attach": 1, "mount": 1})
