"""The workflow command's arguments and main (scripts/workflow.py)."""

import argparse
import os
import signal
import sys

import yaml

from kvworkflow.errors import ExecutionNodesInvalid, WorkflowError
from kvworkflow.flow import Workflow
from kvworkflow.inventory import Inventory
from kvworkflow.jobs import ExecutionNode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_KEYS = ("ssh", "ansible_runner", "collections_path", "slices", "path", "work_dir")

DESCRIPTION = "Run kubevol's sliced reconcile workflow on ansible-runner, as AWX / Automation Platform runs it."
EPILOG = """\
Each stage and each slice is an ansible-runner job (its private data directory under --work-dir): the node stage
as --slices jobs at once (AWX's job slicing: every N-th host by name), the attach/detach stage as one job, the node
stage again; the next stage starts whatever the one before returned (AWX's always edges). Slices named in
--execution-nodes run there over SSH (ansible-runner transmit | ssh NODE ansible-runner worker | ansible-runner
process); the others, and the attach/detach stage, run here. Each job's outcome is read from its events and
artifacts. A round has converged when every job succeeded and every plan had no step and nothing blocked.
Arguments after -- are given to every ansible-playbook (e.g. -v).

  scripts/workflow.py -i inventory --slices 3 --rounds 5 --until-converged -e kubevol_cluster_state=/srv/cluster.json

Exit status: 0 when the workflow converged (--until-converged) or the last round's jobs all succeeded; 1 otherwise;
2 when no job could be started (bad arguments, an unreadable inventory)."""


def extra_vars(values):
    """``-e`` values as ansible-playbook takes them: KEY=VALUE pairs, a YAML or JSON mapping, or @FILE."""
    from ansible.parsing.splitter import parse_kv  # pylint: disable=import-outside-toplevel
    result = {}
    for value in values or ():
        if value.startswith("@"):
            with open(value[1:]) as handle:
                data = yaml.safe_load(handle)
        elif value.lstrip().startswith(("{", "[")):
            data = yaml.safe_load(value)
        else:
            data = parse_kv(value)
        if not isinstance(data, dict):
            raise SystemExit("workflow: -e %s is not a mapping of variables" % value)
        result.update(data)
    return result


def env_pairs(values):
    result = {}
    for value in values or ():
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise SystemExit("workflow: --env %s: give KEY=VALUE" % value)
        result[key] = text
    return result


def execution_nodes(path):
    """{slice number: ExecutionNode} from the YAML file at ``path`` (cli's EXECUTION NODES)."""
    if not path:
        return {}
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as err:
        raise ExecutionNodesInvalid(path=path, detail=str(err))
    if not isinstance(data, dict):
        raise ExecutionNodesInvalid(path=path, detail="it is not a mapping")
    by_slice = {}
    for name, spec in data.items():
        if not isinstance(spec, dict) or set(spec) - set(NODE_KEYS):
            raise ExecutionNodesInvalid(path=path, detail="node %s: keys are %s" % (name, ", ".join(NODE_KEYS)))
        ssh, slices = spec.get("ssh"), spec.get("slices") or []
        if not (isinstance(ssh, list) and ssh and all(isinstance(a, str) for a in ssh)):
            raise ExecutionNodesInvalid(path=path, detail="node %s: ssh must be an argv list" % name)
        if not spec.get("ansible_runner") or not spec.get("collections_path"):
            raise ExecutionNodesInvalid(path=path, detail="node %s: ansible_runner and collections_path are "
                                                          "required" % name)
        node = ExecutionNode(str(name), ssh, spec["ansible_runner"], spec["collections_path"], spec.get("path"),
                             spec.get("work_dir"))
        for number in slices:
            if not isinstance(number, int) or number < 1 or number in by_slice:
                raise ExecutionNodesInvalid(path=path, detail="node %s: slices are distinct numbers from 1" % name)
            by_slice[number] = node
    return by_slice


def parse(argv):
    parser = argparse.ArgumentParser(description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", required=True, help="the inventory of the Kubernetes nodes")
    parser.add_argument("--slices", type=int, default=2, help="the node stage's job_slice_count (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to run the workflow (default 1)")
    parser.add_argument("--until-converged", action="store_true",
                        help="stop after the first round in which nothing is left; exit 1 if none")
    parser.add_argument("--overlap", action="store_true",
                        help="start each round's second node stage together with its attach/detach stage")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VARS",
                        help="the job templates' extra variables: KEY=VALUE, YAML/JSON, or @FILE (repeatable)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable of every job, here and on execution nodes (repeatable)")
    parser.add_argument("--work-dir", default="workflow-jobs", help="the jobs' private data directories")
    parser.add_argument("--collections-path", default=os.environ.get("ANSIBLE_COLLECTIONS_PATH") or
                        os.path.join(REPO, ".build", "collections"),
                        help="where the kubevol.volumes collection is, for the jobs run here")
    parser.add_argument("--ansible-bin", default=os.path.dirname(sys.executable),
                        help="the directory of the ansible-playbook the jobs run here use (default: this Python's)")
    parser.add_argument("--execution-nodes", metavar="FILE",
                        help="YAML: {name: {ssh: [argv], ansible_runner: PATH, collections_path: PATH, slices: [k], "
                             "work_dir: PATH}}: the node stage's slices k run on that execution node")
    parser.add_argument("--job-timeout", type=int, default=0, help="seconds after which a job is stopped (0: none)")
    parser.add_argument("--result", metavar="FILE", help="also write the workflow's outcome as JSON")
    parser.add_argument("cmdline", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.slices < 1 or args.rounds < 1:
        parser.error("--slices and --rounds must be at least 1")
    return args


def job_env(args):
    """The envvars of every job: the collection's path and the ansible-playbook to run (for jobs run here; an
    execution node's own replace them), host key checking as the caller has it (ansible-runner would turn it off),
    and --env."""
    env = {"ANSIBLE_COLLECTIONS_PATH": args.collections_path,
           "PATH": args.ansible_bin + os.pathsep + os.environ.get("PATH", ""),
           "ANSIBLE_HOST_KEY_CHECKING": os.environ.get("ANSIBLE_HOST_KEY_CHECKING", "True")}
    env.update(env_pairs(args.env))
    return env


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = []
    if "--" in argv:
        rest, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    args = parse(argv)
    cmdline = " ".join(list(args.cmdline) + rest) or None
    try:
        inventory = Inventory.read(args.inventory, os.path.join(args.ansible_bin, "ansible-inventory"))
        flow = Workflow(inventory, args.slices, args.work_dir, extra_vars(args.extra_vars), job_env(args), cmdline,
                        args.job_timeout or None, execution_nodes(args.execution_nodes))
    except WorkflowError as err:
        print(str(err), file=sys.stderr)
        return 2
    # a stopped workflow (SIGTERM, as AWX cancels a workflow job) stops its jobs too
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        return flow.run(args.rounds, args.until_converged, args.overlap)
    finally:
        flow.cancel()  # an interrupted workflow leaves no job running
        if args.result:
            flow.write_result(args.result)
