#!/usr/bin/env bash
# The main job, on a fresh machine: install what is missing, start 3 local SSH nodes, reconcile the
# example cluster, write data, move a pod to another node and grow its claim, reconcile again, read
# the data back, print each plan and each node's mounts and sizes, stop the nodes.
#
#   scripts/demo.sh [--keep]      # --keep leaves the nodes running (stop: python3 scripts/testnodes.py down)
#
# Needs root (loop devices, mounts, sshd). See scripts/demo.py for the steps.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
kv_is_root || kv_die "the demo needs root: it creates loop devices, mounts and local sshd nodes"
# shellcheck source=scripts/bootstrap.sh
. "$KV_ROOT/scripts/bootstrap.sh"
cd "$KV_ROOT"
exec "$KV_VENV/bin/python" scripts/demo.py "$@"
