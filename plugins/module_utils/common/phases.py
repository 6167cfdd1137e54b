# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""THE phase table: the one place that says which plan steps each node phase runs, with which node module, in
which order, and whether it tears down or sets up.

A plan step is an (action, target) pair (a "step kind"); the planner emits them in STEP_KINDS order, the order of
the kubelet's and the A/D controller's reconcilers: unmount pods, then devices, then detach, before anything is
attached (reconciler.go detaches before it attaches, so an RWO volume follows its pod), then attach, stage, publish,
and expansion, the controller's before the node's (the external-resizer, then the kubelet).

A *phase* is one node module call's worth of those steps on one node (PHASES); a *node task* is one task of the
reconcile role, which runs one or more phases per node (NODE_TASKS: the teardown alone, so every detach is done
and recorded before any node attaches; then the setup phases in one node_volume_setup execution). Shared code: the
planner, the controller's executor, the node_phases action and node_volume_setup on the node all read this table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

Phase = namedtuple("Phase", "name step_kinds module module_args order teardown")
Phase.__doc__ = """One node phase. step_kinds: the (action, target) plan steps it runs, in order; module: the public
node module that runs it on a node, with module_args; order: its position in a run; teardown: True for the phase
that takes volumes away (unmount, detach), False for those that set them up (attach, mount, expand)."""

PHASES = (
    Phase("teardown", (("unmount", "pod"), ("unmount", "device"), ("cleanup", "directory"), ("detach", "device")),
          "kubevol.volumes.volume_detach", {}, 0, True),
    Phase("attach", (("attach", "device"),), "kubevol.volumes.k8s_volume_attach", {}, 1, False),
    Phase("mount", (("mount", "device"), ("mount", "pod")), "kubevol.volumes.node_volume_mount", {}, 2, False),
    Phase("expand_controller", (("expand", "controller"),), "kubevol.volumes.fs_expand", {"stage": "controller"}, 3,
          False),
    Phase("expand_node", (("expand", "node"),), "kubevol.volumes.fs_expand", {"stage": "node"}, 4, False),
)
BY_NAME = dict((phase.name, phase) for phase in PHASES)
NAMES = tuple(phase.name for phase in PHASES)
# the setup phases, in order: what one node_volume_setup execution runs
SETUP_PHASES = tuple(phase.name for phase in PHASES if not phase.teardown)
# the plan actions of the setup phases' steps (attach, mount, expand), as the planner's summary counts them
SETUP_ACTIONS = frozenset(kind[0] for phase in PHASES if not phase.teardown for kind in phase.step_kinds)
# the node module that runs a node's setup phases in one execution, when the node has work in more than one of them
SETUP_MODULE = "kubevol.volumes.__internal.node_volume_setup"
# every step kind the planner emits, in the order it emits them (and a run carries them out)
STEP_KINDS = tuple(kind for phase in PHASES for kind in phase.step_kinds)
# the step kinds that take a volume away from a node (the teardown guard counts them; cleanup removes only an
# empty directory)
TEARDOWN_KINDS = frozenset(kind for phase in PHASES if phase.teardown for kind in phase.step_kinds
                           if kind[0] != "cleanup")
# the reconcile role's node tasks, in the order a run sequences them (executor.run_tasks)
NODE_TASKS = ("teardown", "setup", "expand_node")
# the task that runs external CSI drivers' Controller calls on their controller hosts, between the teardown and the
# setup, only when the plan has such calls (executor.run_tasks, run/controller_outcome.py)
CONTROLLER_TASK = "controller"
# what node_phases runs besides the phases: the node's facts, alone
FACTS = "facts"

# step kind -> the name of the phase that runs it
KIND_PHASE = dict((kind, phase.name) for phase in PHASES for kind in phase.step_kinds)


def step_kind(step):
    """A plan step's (action, target)."""
    return (step.get("action"), step.get("target"))


def phase_of(kind):
    """The name of the phase that runs step kind ``kind`` (an (action, target) pair), or None."""
    return KIND_PHASE.get(kind)


def order_of(kind):
    """The run position of step kind ``kind``'s phase; -1 for a kind no phase runs."""
    name = KIND_PHASE.get(kind)
    return BY_NAME[name].order if name is not None else -1


def task_modules(names):
    """The node modules a node task of phases ``names`` runs on a node with work in each of them (node_phases): one
    SETUP_MODULE execution for its setup phases when it has several, and each other phase's own module."""
    setup = [name for name in names if name in SETUP_PHASES]
    modules = [SETUP_MODULE] if len(setup) > 1 else []
    for name in names:
        module = BY_NAME[name].module if name in BY_NAME and (name not in setup or len(setup) == 1) else None
        if module is not None and module not in modules:
            modules.append(module)
    return modules


def setup_module_wanted(summary):
    """Whether some node may run SETUP_MODULE for a plan of ``summary`` (the planner's steps per action, over every
    node): only a node with work in more than one setup phase runs it, so a plan with steps of one setup action at most
    (a teardown, pods mounted on devices already staged) runs none. Never false where a node will run it."""
    return sum(1 for action in SETUP_ACTIONS if (summary or {}).get(action)) > 1


def in_order(names):
    """``names`` (phase names, each once) sorted in the table's order; an unknown name raises ValueError."""
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise ValueError("unknown phase(s) %s (phases: %s)" % (", ".join(map(str, unknown)), ", ".join(NAMES)))
    return sorted(set(names), key=lambda name: BY_NAME[name].order)


def run_in_order(names, work, run, stop=None):
    """THE phase loop (node_phases on the controller, node_volume_setup on the node): each phase of ``names`` in
    the table's order. ``work(name)``: that phase's input now (what earlier phases left of it; falsy: nothing to do,
    the phase is not run); ``run(name, input)``: its result; ``stop(name, result)``: True when nothing more may run
    (an unreachable node). Returns {phase name: result} of the phases run."""
    results = {}
    for name in in_order(names):
        todo = work(name)
        if not todo:
            continue
        results[name] = run(name, todo)
        if stop is not None and stop(name, results[name]):
            break
    return results
