# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run: the task behind each controller module (plan_task.py, record_task.py, run_lock_task.py,
reconcile_run_task.py), the executor that advances the run's state step by step, the plan record, the report and
the verdict.

The top of the controller's folders: it imports the planner (plan/), the cluster's model (cluster/), the stores
(stores/) and the records (records/), and none of them imports run/. What the stores must know of the run lock (its
record, when it is stale, its errors) is the stores' own (stores/run_lock.py); taking, renewing and releasing it
for a run is here (run_lock_task.py).
"""
