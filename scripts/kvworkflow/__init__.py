"""kubevol's sliced reconcile workflow on ansible-runner, AWX's own execution engine (docs/fleet.md).

scripts/workflow.py is the command and stays a thin entry point. The code is here, beside the test nodes'
package (scripts/kvtestnodes/), and not in the collection: it is the operator's tooling beside AWX (what AWX does
for a workflow of job templates, done from one controller), not something Ansible runs. Every stage and slice is an
ansible-runner job with its own private data directory, run here or on an execution node over SSH through
ansible-runner's streaming (transmit, worker, process), and read back from its job events and artifacts.

Modules, lowest first (each imports only modules above it in this list):

* errors    -- the workflow's errors, each with its code (docs/errors.md);
* events    -- a job's outcome read from its artifacts: status, per-host counts, failed and unreachable hosts, the
               plan it made and what it left blocked (pure: no ansible-runner import);
* converge  -- the convergence rule over a round's outcomes (pure);
* inventory -- the inventory as AWX holds it, and AWX's job slicing of it;
* jobs      -- one job: its private data directory, run here (ansible-runner's Python API) or on an execution node
               (transmit | ssh NODE ansible-runner worker | process);
* flow      -- the workflow: node stage (sliced) -> attach/detach stage -> node stage, always edges, in rounds;
* cli       -- the argument parser and main.
"""
