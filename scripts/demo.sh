#!/usr/bin/env bash
# The main job: bootstrap, then run the demo playbook.
#
#   scripts/demo.sh [ansible-playbook options...]
#
# Runs playbooks/demo.yml when it exists; otherwise playbooks/plan.yml against
# examples/cluster.yaml (passed as kubevol_cluster_file). Extra arguments go to ansible-playbook.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
# shellcheck source=scripts/bootstrap.sh
. "$KV_ROOT/scripts/bootstrap.sh"
cd "$KV_ROOT"

if [ -f playbooks/demo.yml ]; then
    exec ansible-playbook playbooks/demo.yml "$@"
elif [ -f playbooks/plan.yml ] && [ -f examples/cluster.yaml ]; then
    exec ansible-playbook playbooks/plan.yml -e "kubevol_cluster_file=$KV_ROOT/examples/cluster.yaml" "$@"
else
    kv_die "nothing to run yet: neither playbooks/demo.yml nor playbooks/plan.yml + examples/cluster.yaml"
fi
