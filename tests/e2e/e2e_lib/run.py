"""The results of one ansible-playbook run, as the JSON callback (callback_plugins/kubevol_e2e_json.py) dumps them."""
from e2e_lib.environment import NODE_MODULES, PHASE_MODULES, PHASE_ORDER


class Run:
    def __init__(self, argv, rc, stdout, results, log):
        self.argv, self.rc, self.stdout, self.log = argv, rc, stdout, log
        self.tasks = results.get("tasks", [])
        self.stats = results.get("stats", {})
        self.complete = results.get("complete", False)

    def __repr__(self):
        return "<Run rc=%s log=%s>" % (self.rc, self.log)

    def describe(self):
        return "ansible-playbook rc=%s (full output: %s)\n%s" % (self.rc, self.log, self.stdout[-6000:])

    def changed(self, host):
        return self.stats.get(host, {}).get("changed")

    def executions(self, action=None, name=None):
        """[(task name, host, status, result)] for every host a task ran on (not skipped)."""
        out = []
        for task in self.tasks:
            if action and task["action"] != action and task["action"] != action.rsplit(".", 1)[-1]:
                continue
            if name and name not in task["name"]:
                continue
            for host, items in task["hosts"].items():
                for item in items:
                    if item["status"] != "skipped":
                        out.append((task["name"], host, item["status"], item["result"]))
        return out

    def node_module_runs(self):
        """{host: [module name, ...]} of the node modules that ran (the phases' work): those the role's
        node_phases tasks ran over each host's connection, and node modules run as tasks of their own."""
        runs = {}
        for task in self.tasks:
            action = task["action"].rsplit(".", 1)[-1]
            for host, items in task["hosts"].items():
                for item in items:
                    if item["status"] == "skipped":
                        continue
                    if action == "node_phases":
                        # the phases that ran (phase_status; the results themselves are kept for the record step)
                        ran = item["result"].get("phase_status") or item["result"].get("phase_results") or {}
                        for phase in sorted(ran, key=PHASE_ORDER.index):
                            runs.setdefault(host, []).append(PHASE_MODULES[phase])
                    elif any(action == m.rsplit(".", 1)[-1] for m in NODE_MODULES):
                        runs.setdefault(host, []).append(action)
        return runs

    def result(self, name, host=None):
        """The (first) non-skipped result of the task whose name contains `name`."""
        for task_name, h, _status, result in self.executions(name=name):
            if host is None or h == host:
                return result
        return None

    def plan_lines(self):
        """The plan's table as the run printed it (text lines, reconcile_report's ``lines``)."""
        result = self.result("Show the plan") or {}
        lines = result.get("lines") or result.get("msg") or []
        return lines if isinstance(lines, list) else str(lines).splitlines()

    def plan(self):
        return (self.result("Plan the operations") or {}).get("plan") or []

    def summaries(self):
        """Each reconcile's end-of-run summary, in order: the summary of its last reconcile_run step
        ({lines, nodes, blocked, errors})."""
        return [result["summary"] for _name, _host, _status, result in self.executions(action="kubevol.volumes.reconcile_run")
                if "summary" in result]

    def summary(self):
        """The role's end-of-run summary (the last reconcile_run's): {lines, nodes, blocked, errors}, or {}."""
        summaries = self.summaries()
        return summaries[-1] if summaries else {}

    def report(self):
        """The run's {blocked, errors} (every blocked item once, with its action), or {} when it had neither."""
        summary = self.summary()
        if not summary.get("blocked") and not summary.get("errors"):
            return {}
        return {"blocked": summary.get("blocked") or [], "errors": summary.get("errors") or []}

    def summary_lines(self):
        """The end-of-run report's lines as printed (reconcile_report's ``lines``)."""
        return (self.result("Report the run") or {}).get("lines") or []

    def kubevol_report(self):
        """The role's kubevol_report (the Report the run task's result), or {}."""
        return self.result("Report the run") or {}

    def verdicts(self):
        """{host: (status, msg)} of the role's last step on each host it ran on (failed, unreachable or ok)."""
        return dict((host, (status, result.get("msg"))) for _task, host, status, result
                    in self.executions(name="Fail each host whose node failed"))
