#!/usr/bin/env bash
# Stage test.d/20-e2e of scripts/test.sh: end-to-end reconciles over real SSH nodes (tests/e2e).
# Needs root (sshd in namespaces, loop devices, mounts). The compat test (ansible-core 2.19 on
# Python 3.11 over paramiko) uses .venv-compat; under CI=true it fails when that venv is missing.
# Run alone: scripts/test.sh test.d/20-e2e   (or: .venv/bin/python -m pytest tests/e2e)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/lib.sh"

kv_is_root || { echo "needs root (sshd in namespaces, loop devices, mounts)"; exit 1; }
[ -d "$KV_ROOT/tests/e2e" ] || { echo "no tests/e2e"; exit 1; }

if [ -z "${KUBEVOL_PYTHON_COMPAT:-}" ]; then
    if [ -x "$KV_COMPAT/bin/python" ]; then
        export KUBEVOL_PYTHON_COMPAT=$KV_COMPAT/bin/python
    elif [ -n "${KV_CONTROLLER_FALLBACK:-}" ]; then
        export KUBEVOL_PYTHON_COMPAT=$KV_VENV/bin/python   # the controller venv is the 2.19 / 3.11 one
    fi
fi

reports=${KUBEVOL_REPORTS:-$KV_BUILD/reports}
mkdir -p "$reports"
rc=0
cd "$KV_ROOT"
"$KV_VENV/bin/python" -m pytest -ra -p no:cacheprovider --durations=10 --junitxml="$reports/e2e.xml" \
    -o junit_family=xunit2 tests/e2e || rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests in tests/e2e"; exit 1; fi
exit $rc
