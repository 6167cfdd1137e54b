# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node's module results of a node task, kept on the controller for the run's record step.

A node task's result is what Ansible prints for its host: a failed node prints it whole ("fatal: [node2]: FAILED! =>
{...}"). The node's own message is what the reader needs there, once; each phase's results, volume by volume (with the
same message again in each failed volume's entry), are what the record step needs. So node_phases keeps the latter
here, one file per node and node task, in Ansible's local temporary directory on the controller (one per
ansible-playbook process, removed when it exits: as the plan record in check mode), and its task result carries the
node's message and a summary. reconcile_run reads them back by the run's id, the task's phases and the node's name:
no path crosses a variable. A call without a plan record (an ad-hoc node_phases with a whole plan) has no run id and
returns its phase results in its result, as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import tempfile

DIRECTORY = "kubevol-node-results"


def path_of(local_tmp, run_id, task_phases, node):
    """The file of ``node``'s results of the node task that ran ``task_phases`` in run ``run_id``. The node's name is
    hashed: a host's kubevol_node_name is the operator's, not a path component kubevol has checked."""
    task = "-".join(task_phases)
    name = hashlib.sha256(str(node).encode("utf-8")).hexdigest()[:40]
    return os.path.join(local_tmp, DIRECTORY, str(run_id), task, name + ".json")


def save(local_tmp, run_id, task_phases, node, phase_results):
    """Keep one node's {phase: module result} (written whole or not at all: a temporary file renamed into place)."""
    path = path_of(local_tmp, run_id, task_phases, node)
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, 0o700)
    except OSError as err:  # the task's other hosts' workers make it at the same time
        if err.errno != errno.EEXIST or not os.path.isdir(directory):
            raise
    fd, temp = tempfile.mkstemp(prefix=".node.", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"node": node, "phase_results": phase_results}, handle, separators=(",", ":"), default=str)
        os.rename(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    return path


def load(local_tmp, run_id, task_phases, node):
    """One node's {phase: module result} of that task, or None when the node kept none (it had no work, or its task
    was stopped before it could: a timeout)."""
    path = path_of(local_tmp, run_id, task_phases, node)
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("node") != node or not isinstance(data.get("phase_results"), dict):
        return None
    return data["phase_results"]


def with_kept(results, local_tmp, run_id, task_phases):
    """node_results' {node: task result} with each node's kept phase results put back as its ``phase_results``
    (a result that says it kept them: ``phase_results_kept``). A node whose file is missing keeps no
    ``phase_results``: the record step counts its work as not done, never as done."""
    if not results or run_id is None or not local_tmp:
        return results
    out = {}
    for node, result in results.items():
        if isinstance(result, dict) and result.get("phase_results_kept") and "phase_results" not in result:
            kept = load(local_tmp, run_id, task_phases, node)
            if kept is not None:
                result = dict(result, phase_results=kept)
        out[node] = result
    return out
