# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: the desired and actual states of world and the pure rules that turn them into steps, as the
attach/detach controller's and the kubelet's reconcilers do.

It reads the cluster's model (cluster/) and asks the volume plugins (volume/) what they can do; it imports no node,
driver, store or run code. The module glue that loads the cluster from a store and writes the plan as the run's
record is above it, in run/ (run/plan_task.py), so the planner stays a function of its input.
"""
