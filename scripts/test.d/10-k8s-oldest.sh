#!/usr/bin/env bash
# Stage test.d/10-k8s-oldest of scripts/test.sh: the Kubernetes API store tests (fake API server, no
# root needed) on the oldest kubernetes client kubevol claims, in its own venv built from
# requirements/k8s-oldest.txt (.build/venv-k8s-oldest, rebuilt when that file changes). The unit stage
# runs the same tests on the newest client (requirements/controller.txt).
# Run alone: scripts/test.sh test.d/10-k8s-oldest
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/lib.sh"

req=$KV_ROOT/requirements/k8s-oldest.txt
venv=$KV_BUILD/venv-k8s-oldest
[ -x "$KV_VENV/bin/python" ] || { echo "no controller venv (.venv): run scripts/bootstrap.sh"; exit 1; }
kv_venv "$venv" "$KV_VENV/bin/python" "$req"

want=$(sed -n 's/^kubernetes==\([0-9.]*\).*/\1/p' "$req")
have=$("$venv/bin/python" -c 'import kubernetes; print(kubernetes.__version__)')
[ "$have" = "$want" ] || { echo "the venv has kubernetes $have, $req pins $want"; exit 1; }
echo "kubernetes $have, $("$venv/bin/python" -c 'import ansible, sys; print("ansible-core %s on Python %s" % (ansible.__version__, sys.version.split()[0]))' 2>/dev/null || echo '?')"

reports=${KUBEVOL_REPORTS:-$KV_BUILD/reports}
mkdir -p "$reports"
rc=0
cd "$KV_ROOT"
# test_reconcile_role.py needs root and SSH test nodes; it is the integration stage's.
"$venv/bin/python" -m pytest -ra -p no:cacheprovider --junitxml="$reports/k8s-oldest.xml" -o junit_family=xunit2 \
    -o junit_suite_name="k8s-oldest (kubernetes $have)" \
    tests/unit/plugins/module_utils/stores/test_kubernetes*.py tests/unit/plugins/module_utils/test_k8s_auth.py \
    tests/unit/plugins/module_utils/test_record_conditions.py \
    tests/integration/kubeapi --ignore=tests/integration/kubeapi/test_reconcile_role.py || rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi
exit $rc
