# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose failure each failure of a run is: which hosts of the play failed or could not be reached, and what failed
where no host of the play can carry it.

What Ansible shows is the truth: a node's failure fails that node's host (its task, then the role's last step, so
that the play's recap, ``--limit @<playbook>.retry``, AWX's host status and every callback count exactly the hosts
that failed); a node that could not be reached is unreachable. A failure no host of the play owns (a node outside
the run's hosts with steps it did not run, a controller host outside the play, a record the run could not write, a
controller step that stopped the run) fails the run without failing a host that did not fail: on localhost, in the
play the collection's playbooks end with (playbooks/reconcile.yml). Pure functions over the run's report
(run/run_report.py) and each host's own results; the actions reconcile_report and reconcile_verdict call them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def _facts_unreachable(result):
    return isinstance(result, dict) and bool(result.get("unreachable") or result.get("timedout"))


def limited_out(error, inventory, hosts):
    """An error of a node of the inventory that this run's hosts leave out (--limit, or kubevol_hosts naming a group):
    its steps were not run because the operator chose so, not because anything failed. The report counts them in
    its line about the nodes outside the run."""
    node = error.get("node")
    return (error.get("phase") not in ("controller", "facts", "record") and node is not None and node in inventory
            and node not in hosts)


def host_failures(summary, hosts, node_of, facts_result_of=None, stopped=None, inventory=()):
    """{failed_hosts: {host: [phases]}, unreachable_hosts: {host: [phases]}, failed_elsewhere: [error]}.

    ``inventory``: the inventory's hosts; the steps of a node of the inventory the run's hosts leave out are not a
    failure (limited_out).

    ``summary``: run_summary's result (or None when the run stopped before it had one); ``hosts``: the play's hosts;
    ``node_of(host)``: its Kubernetes node name; ``facts_result_of(host)``: its facts task's result, read only for a
    node whose facts failed (unreachable, or failed). ``stopped``: the name of the controller task that stopped the
    run, when one did."""
    summary = summary or {}
    failed_nodes = dict(summary.get("failed_nodes") or {})
    inventory, play = frozenset(inventory or ()), frozenset(hosts)
    elsewhere = []
    for error in summary.get("failed_elsewhere") or ():
        if error.get("phase") == "outside":  # run_report.outside_entry: the nodes the inventory does not have stay
            names = [name for name in error.get("nodes") or () if name not in inventory or name in play]
            if names:
                elsewhere.append(error if len(names) == len(error["nodes"]) else run_report.outside_entry(names))
        elif not limited_out(error, inventory, play):
            elsewhere.append(error)
    unreachable_nodes = set(summary.get("unreachable_nodes") or (
        error.get("node") for error in summary.get("errors") or () if error.get("unreachable")))
    failed, unreachable = {}, {}
    if failed_nodes or elsewhere:
        by_node = {}
        for host in hosts:
            by_node.setdefault(node_of(host), []).append(host)
        # a controller host's failure is named by its inventory name
        for error in list(elsewhere):
            if error.get("phase") == "controller" and error.get("node") in hosts:
                elsewhere.remove(error)
                failed_nodes.setdefault(node_of(error["node"]), []).append("controller")
        for node, phases in sorted(failed_nodes.items(), key=lambda item: item[0] or ""):
            for host in by_node.get(node) or ():
                gone = node in unreachable_nodes or ("facts" in phases and facts_result_of is not None
                                                     and _facts_unreachable(facts_result_of(host)))
                (unreachable if gone else failed)[host] = list(phases)
            if node not in by_node:  # a node the report lists that no host of the play is (the controller acts for it)
                elsewhere.append({"node": node, "phase": ", ".join(map(str, phases)), "volumes": [],
                                  "msg": "failed in %s, where the controller acts for it" % ", ".join(map(str, phases))})
    if stopped:
        elsewhere.append({"node": None, "phase": "controller step", "volumes": [],
                          "msg": "the run stopped at its task %r on the controller, whose message is above" % stopped})
    return {"failed_hosts": failed, "unreachable_hosts": unreachable, "failed_elsewhere": elsewhere}


def verdict(report, host, node, pin_here=False):
    """What the role's last step returns for ``host``: {} when it did not fail; ``failed`` or ``unreachable`` with
    one sentence naming the host, its node and the tasks it failed in (their messages are in those tasks' output).
    ``pin_here``: no play on localhost follows to fail the run for what failed outside its hosts, and this host is
    the play's first: it carries that failure, saying that it is not its own."""
    report = report or {}
    named = "host %s" % host if node in (None, host) else "host %s (node %s)" % (host, node)
    unreachable = (report.get("unreachable_hosts") or {}).get(host)
    if unreachable is not None:
        return {"unreachable": True,
                "msg": "%s could not be reached in this run (%s); reach it and run again" % (
                    named, ", ".join(map(str, unreachable)))}
    failed = (report.get("failed_hosts") or {}).get(host)
    elsewhere = report.get("failed_elsewhere") or ()
    if failed is not None:
        return {"failed": True, "msg": "%s %s in this run (%s), as its task's output above says; fix the cause and "
                                       "run again" % (named, "would fail" if report.get("check_mode") else "failed",
                                                      ", ".join(map(str, failed)))}
    if elsewhere and pin_here:
        return {"failed": True, "msg": "the run failed outside its hosts (%d failure(s), listed in the report above), "
                                       "not on %s; it is failed here because no play on localhost follows to fail the "
                                       "run for them" % (len(elsewhere), named)}
    return {}


def localhost_in_run(limit, read=None):
    """Whether a play on localhost runs under ``--limit limit`` (ansible_limit; None: no limit): implicit localhost
    is one host of a limit only when the limit names it. ``read(path)``: the lines of a ``@file`` limit."""
    if not limit:
        return True
    names = []
    for part in str(limit).replace(":", ",").split(","):
        part = part.strip()
        if part.startswith("@"):
            try:
                names.extend(line.strip() for line in (read or _read_lines)(part[1:]))
            except (IOError, OSError):
                continue
        elif part:
            names.append(part)
    return any(name in LOCAL_NAMES for name in names) and not any(
        name.lstrip("!") in LOCAL_NAMES for name in names if name.startswith("!"))


def _read_lines(path):
    with open(os.path.expanduser(path)) as handle:
        return handle.read().splitlines()
