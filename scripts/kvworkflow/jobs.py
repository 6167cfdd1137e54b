"""One ansible-runner job: a stage of the workflow, or one slice of the node stage.

Each job gets a private data directory of its own, as AWX prepares one per job:

    <work dir>/<tag>/project/               the AWX project: one-line playbooks importing the collection's stages
    <work dir>/<tag>/inventory/hosts.json   the job's inventory (a slice's hosts only, AWX's job slicing)
    <work dir>/<tag>/env/extravars          the job template's extra variables
    <work dir>/<tag>/env/envvars            where Ansible and the kubevol.volumes collection are (ANSIBLE_COLLECTIONS_PATH)
    <work dir>/<tag>/artifacts/<tag>/       what ansible-runner writes: status, rc, job_events/, stdout

and runs in one of two ways:

- here, through ansible-runner's Python API (``ansible_runner.run_async``): ansible-playbook under ansible-runner's
  event callback, its events written as they come;
- on an execution node, as AWX runs a job on one: ``ansible-runner transmit`` streams the private data directory
  and the job's arguments into ``ssh NODE ansible-runner worker``, which runs it there and streams back its events,
  status and artifacts, which ``ansible-runner process`` unpacks here into the same artifact directory. The
  execution node needs Python, ansible-core, ansible-runner and the collection (an execution environment's
  contents). A worker that dies or a stream that is lost ends the job with status ``error`` and the reason; the job
  is not retried: the workflow's next round reconciles its nodes (AWX fails such a job the same way).

Either way the outcome is read from the artifacts (events.read_job), never from the console.
"""

import json
import os
import shutil
import subprocess
import threading
import uuid
import warnings

from kvworkflow.events import JobOutcome, read_job

NODE_STAGE = "reconcile_node_stage.yml"
ATTACH_DETACH = "reconcile_attach_detach.yml"
# The AWX project's playbooks: a job template names a playbook file of its project (docs/fleet.md)
PROJECT = {
    NODE_STAGE: "---\n- name: The node stage of kubevol's sliced reconcile\n"
                "  ansible.builtin.import_playbook: kubevol.volumes.reconcile_node_stage\n",
    ATTACH_DETACH: "---\n- name: The attach/detach stage of kubevol's sliced reconcile\n"
                   "  ansible.builtin.import_playbook: kubevol.volumes.reconcile_attach_detach\n",
}
WORKER_LOST = "KV-WORKER-LOST"
# ansible-runner starts ansible-playbook with pexpect (forkpty) in the job's thread. Python warns about a fork in a
# threaded process: the child could deadlock on a lock another thread held. ptyprocess's child only sets the
# terminal's size, changes directory and execs: it takes no such lock.
warnings.filterwarnings("ignore", message=r"This process .* is multi-threaded, use of forkpty\(\)",
                        category=DeprecationWarning)
SSH_KEEPALIVE = ("-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "BatchMode=yes")


class ExecutionNode:
    """A host that runs jobs with ``ansible-runner worker``, reached with ``ssh`` (argv, destination included).
    ``env``: the environment its jobs get (PATH to its Ansible, ANSIBLE_COLLECTIONS_PATH to its collections)."""

    def __init__(self, name, ssh, ansible_runner, collections_path, path=None, work_dir=None):
        self.name = name
        self.ssh = list(ssh)
        self.ansible_runner = ansible_runner
        self.collections_path = collections_path
        self.path = path or os.path.dirname(ansible_runner) + os.pathsep + "/usr/local/bin:/usr/bin:/bin"
        self.work_dir = work_dir  # where workers unpack jobs there (None: the job's own path, when it is shared)

    def env(self):
        return {"PATH": self.path, "ANSIBLE_COLLECTIONS_PATH": self.collections_path}


class Job:
    """One job. ``start`` prepares its private data directory and starts it in a thread; ``wait`` returns its
    events.JobOutcome; ``cancel`` stops it (as AWX cancels a job)."""

    def __init__(self, tag, label, playbook, work_dir, inventory, hosts, extravars, envvars, cmdline=None,
                 timeout=None, node=None, scope=None, project=None):
        self.tag, self.label, self.playbook, self.scope = tag, label, playbook, scope
        self.project = PROJECT if project is None else project
        self.pdd = os.path.join(work_dir, tag)
        self.artifacts = os.path.join(self.pdd, "artifacts", tag)
        self.inventory, self.hosts = inventory, hosts
        self.extravars, self.envvars = dict(extravars), dict(envvars)
        self.cmdline, self.timeout, self.node = cmdline, timeout, node
        self.status, self.explanation = "unstarted", None
        self._cancel = threading.Event()
        self._thread = None
        self._ssh = None
        self.outcome = None

    # -- the private data directory --------------------------------------------------------------------------------
    def prepare(self):
        shutil.rmtree(self.pdd, ignore_errors=True)
        for folder in ("project", "inventory", "env"):
            os.makedirs(os.path.join(self.pdd, folder), mode=0o700)
        for name, text in self.project.items():
            with open(os.path.join(self.pdd, "project", name), "w") as handle:
                handle.write(text)
        self.inventory.write(os.path.join(self.pdd, "inventory", "hosts.json"), self.hosts)
        env = dict(self.envvars)
        if self.node is not None:
            env.update(self.node.env())
        for name, value in (("extravars", self.extravars), ("envvars", env)):
            path = os.path.join(self.pdd, "env", name)
            with open(path, "w") as handle:
                json.dump(value, handle, indent=1, sort_keys=True)
            os.chmod(path, 0o600)

    def _runner_args(self):
        args = {"private_data_dir": self.pdd, "playbook": self.playbook, "ident": self.tag, "quiet": True}
        if self.cmdline:
            args["cmdline"] = self.cmdline
        if self.timeout:
            args["timeout"] = self.timeout
        return args

    # -- running -----------------------------------------------------------------------------------------------------
    def start(self):
        try:
            self.prepare()
        except OSError as err:  # a job that cannot be prepared fails alone, named; the others run
            self.status = "error"
            self.explanation = ("its private data directory %s could not be written (%s); free space there or give "
                                "another --work-dir" % (self.pdd, err))
            return self
        target = self._run_local if self.node is None else self._run_remote
        self._thread = threading.Thread(target=self._guarded, args=(target,), name=self.tag, daemon=True)
        self._thread.start()
        return self

    def _guarded(self, target):
        try:
            target()
        except Exception as err:  # pylint: disable=broad-except  # a job's own failure, never the workflow's
            self.status = "error"
            self.explanation = "%s: %s" % (type(err).__name__, err)

    def _status(self, data, runner_config=None):  # pylint: disable=unused-argument
        self.status = data.get("status") or self.status
        if data.get("job_explanation"):
            self.explanation = data["job_explanation"]

    def _run_local(self):
        import ansible_runner  # pylint: disable=import-outside-toplevel  # only where jobs run
        thread, runner = ansible_runner.run_async(cancel_callback=self._cancel.is_set, status_handler=self._status,
                                                  **self._runner_args())
        thread.join()
        self.status = runner.status

    def _worker_argv(self):
        """ssh (with keepalives: a peer that is gone ends the stream) running the worker. The worker unpacks the job
        in a directory of its own under the node's ``work_dir`` (removed when the job ends; two workflows' jobs of
        the same name run there at once), else in a temporary directory it makes."""
        argv = self.node.ssh[:1] + list(SSH_KEEPALIVE) + self.node.ssh[1:] + [self.node.ansible_runner, "worker"]
        if self.node.work_dir:
            where = os.path.join(self.node.work_dir, "%s-%s" % (self.tag, uuid.uuid4().hex[:8]))
            argv += ["--private-data-dir", where, "--delete"]
        return argv

    def _run_remote(self):
        import ansible_runner  # pylint: disable=import-outside-toplevel
        errors = open(os.path.join(self.pdd, "worker-stderr.log"), "w+")
        self._ssh = subprocess.Popen(self._worker_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=errors, start_new_session=True)
        sent = {}

        def transmit():
            try:
                ansible_runner.run(streamer="transmit", _output=self._ssh.stdin, **self._runner_args())
            except (OSError, ValueError) as err:  # the worker went away while the job was being sent
                sent["error"] = str(err)
            finally:
                try:
                    self._ssh.stdin.close()
                except OSError:
                    pass

        sender = threading.Thread(target=transmit, name=self.tag + "-transmit", daemon=True)
        sender.start()
        processor = ansible_runner.run(streamer="process", _input=self._ssh.stdout, status_handler=self._status,
                                       private_data_dir=self.pdd, ident=self.tag, quiet=True)
        sender.join()
        rc = self._ssh.wait()
        errors.seek(0)
        said = " ".join(errors.read().split())[-300:]
        errors.close()
        self.status = processor.status
        if self.status not in ("successful", "failed", "canceled", "timeout"):
            self.status = "error"
            self.explanation = ("the stream from execution node %s ended before the job did: its worker died or the "
                                "connection was lost, so this job's hosts were not all reconciled in this stage; the "
                                "next round reconciles them, and if it happens again check that node's health "
                                "(ssh exit status %s%s%s) [%s]"
                                % (self.node.name, rc, "; ssh said: " + said if said else "",
                                   "; sending the job failed: " + sent["error"] if sent.get("error") else "",
                                   WORKER_LOST))

    def cancel(self):
        self._cancel.set()
        if self._ssh is not None and self._ssh.poll() is None:
            try:
                os.killpg(self._ssh.pid, 15)
            except OSError:
                pass

    def wait(self):
        """The job's outcome, once it has ended."""
        if self._thread is not None:
            self._thread.join()
        if self.outcome is None:
            self.outcome = read_job(self.label, self.artifacts, self.status, self.explanation)
            self.outcome.where = None if self.node is None else self.node.name
            self.outcome.scope = self.scope
        return self.outcome

    def running(self):
        return self._thread is not None and self._thread.is_alive()


def not_started(label, why):
    """The outcome of a job that could not be started."""
    return JobOutcome(label, "error", explanation=why)
