"""End-to-end helpers: real SSH nodes (scripts/testnodes.py), real ansible-playbook runs.

Each test module starts its own nodes once (module scope) in its own state dir
``/tmp/kubevol-e2e-<module>-XXXX`` (under ``/tmp/kubevol-`` so that scripts/test.sh's leftover
check sees anything left behind) and tears them down with ``down --purge`` in a finalizer, also when
a test failed. Runs go through playbooks/reconcile.yml with the default stdout callback (its text
is kept in the state dir) plus tests/e2e/callback_plugins/kubevol_e2e_json.py, which dumps every
task result per host and the recap to a JSON file: the tests read exact changed counts and which
node modules ran where from it.

Interpreters: the controller is the Python running pytest (its ansible-playbook beside it). The
compat run (ansible-core 2.19, Python 3.11, paramiko) uses KUBEVOL_PYTHON_COMPAT, else
<checkout>/.venv-compat/bin/python; when it is missing the test skips, or fails when CI=true.

One concern per module, every name importable from ``e2e_lib`` as well: environment.py (paths, constants, the
interpreters; a module importing e2e_lib skips without root), processes.py (a run's process tree, frozen and
killed; the state file's lock), names.py (names and paths as Kubernetes computes them), run.py (the results of
one run), cluster.py (the nodes and the cluster file), objects.py (cluster objects and queries on the file).
"""
from e2e_lib.environment import (  # noqa: F401 (the names importers use)
    CLUSTER_EDIT, COLLECTIONS, DRIVER, EXAMPLE, HERE, KUBELET, NODE_MODULES, PHASE_MODULES, PHASE_ORDER, PLAYBOOK,
    REPO, TESTNODES, MiB, compat_python, require_compat_python)
from e2e_lib.processes import (  # noqa: F401
    _frozen, _in_vfork, _process_stat, _process_state, _process_tree, _wait_stopped, kill_run, store_write_held)
from e2e_lib.names import global_mount_path, pod_device_path, pod_mount_path, unique_name, va_name  # noqa: F401
from e2e_lib.run import Run  # noqa: F401
from e2e_lib.cluster import Cluster  # noqa: F401
from e2e_lib.objects import (  # noqa: F401
    bound_volume, get, items, node_object, node_status, pod_uid, running_pod, taint_out_of_service, vas, write_list)
