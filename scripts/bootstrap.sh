#!/usr/bin/env bash
# Prepare this checkout for building, testing and running kubevol. Idempotent and quick when
# nothing changed. Run it (`scripts/bootstrap.sh`) or source it (`. scripts/bootstrap.sh`) to also
# get the environment in your shell.
#
#  1. Debian packages the tests and the demo need (apt-get install, only for what is missing).
#  2. .venv         Python 3.12+  from requirements/controller.txt (ansible-core 2.21, lint, ...)
#     .venv-compat  Python 3.11   from requirements/py311.txt      (ansible-core 2.19, paramiko)
#     Each is rebuilt only when its requirements file or interpreter changed (stamp in the venv).
#     Without a Python 3.12 the controller venv falls back to 3.11 + py311.txt.
#     .build/venv-execution-node  Debian's /usr/bin/python3 from requirements/execution-node.txt: an execution
#                  node's ansible-core and ansible-runner, which the SSH test nodes can run (docs/fleet.md)
#  3. .build/collections/ansible_collections/kubevol/volumes -> this checkout; awx.awx beside it, taken from the
#     ansible package's wheel on PyPI (requirements/awx-collection.txt), for playbooks/awx_workflow.yml's checks.
#  4. Exports ANSIBLE_COLLECTIONS_PATH, ANSIBLE_HOME, XDG_CACHE_HOME, ANSIBLE_LOCAL_TEMP (all
#     under .build) and puts .venv/bin first on PATH.
#
# Knobs: KUBEVOL_PYTHON (controller interpreter), KUBEVOL_COMPAT_PYTHON, KUBEVOL_SKIP_APT=1,
#        KUBEVOL_SKIP_COMPAT=1.

# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

# command -> Debian package. cryptsetup is not needed by any test.
KV_APT_NEEDS=(
    sshd:openssh-server ssh:openssh-client ssh-keygen:openssh-client
    mkfs.xfs:xfsprogs xfs_growfs:xfsprogs mkfs.btrfs:btrfs-progs
    mkfs.ext4:e2fsprogs resize2fs:e2fsprogs e2fsck:e2fsprogs
    losetup:util-linux findmnt:util-linux lsblk:util-linux blkid:util-linux unshare:util-linux
    nsenter:util-linux mount:mount sfdisk:fdisk git:git openssl:openssl wipefs:util-linux
    shellcheck:shellcheck   # else ansible-test sanity skips its shellcheck test
    dot:graphviz            # tests/unit/test_pictures.py renders docs/pictures/*.dot
)

kv_bootstrap_apt() {
    local entry cmd pkg missing=()
    for entry in "${KV_APT_NEEDS[@]}"; do
        cmd=${entry%%:*} pkg=${entry#*:}
        if ! PATH=$PATH:/usr/sbin:/sbin command -v "$cmd" >/dev/null 2>&1; then
            [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
        fi
    done
    # Debian's Python modules the nodes' CSI client runs on (bindep.txt profile node): the CSI tests check that
    # the messages behave the same under Debian's grpc/protobuf as under the venv's
    if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import grpc, google.protobuf' >/dev/null 2>&1; then
        missing+=(python3-grpcio python3-protobuf)
    fi
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ -n "${KUBEVOL_SKIP_APT:-}" ]; then
        kv_warn "missing Debian packages (KUBEVOL_SKIP_APT set): ${missing[*]}"; return 0
    fi
    if ! kv_is_root || ! command -v apt-get >/dev/null 2>&1; then
        kv_warn "missing packages, install them yourself: apt-get install ${missing[*]}"; return 0
    fi
    kv_log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
        kv_die "apt-get install ${missing[*]} failed"
    fi
}

# Debian's own python3 needs python3-venv (ensurepip) for `python3 -m venv`.
kv_ensure_venv_module() {
    "$1" -c 'import ensurepip' >/dev/null 2>&1 && return 0
    case $1 in /usr/bin/*) ;; *) return 0 ;; esac
    kv_is_root && [ -z "${KUBEVOL_SKIP_APT:-}" ] || return 0
    kv_log "apt-get install python3-venv (for $1)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv; } >/dev/null \
        || kv_warn "apt-get install python3-venv failed"
}

kv_bootstrap_venvs() {
    local py compat
    py=${KUBEVOL_PYTHON:-$(kv_find_python 12 14)} || py=''
    if [ -n "$py" ]; then
        kv_ensure_venv_module "$py"
        kv_venv "$KV_VENV" "$py" "$KV_ROOT/requirements/controller.txt"
        KV_CONTROLLER_FALLBACK=''
    else
        py=$(kv_find_python 11 11) || kv_die "no Python 3.12+ or 3.11 found (set KUBEVOL_PYTHON)"
        kv_ensure_venv_module "$py"
        kv_warn "no Python 3.12+: .venv falls back to $py with ansible-core 2.19 (requirements/py311.txt)"
        kv_venv "$KV_VENV" "$py" "$KV_ROOT/requirements/py311.txt"
        KV_CONTROLLER_FALLBACK=1
    fi
    export KV_CONTROLLER_FALLBACK
    if [ -n "${KUBEVOL_SKIP_COMPAT:-}" ] || [ -n "$KV_CONTROLLER_FALLBACK" ]; then
        return 0
    fi
    compat=${KUBEVOL_COMPAT_PYTHON:-$(kv_find_python 11 11)} || compat=''
    if [ -n "$compat" ]; then
        kv_ensure_venv_module "$compat"
        kv_venv "$KV_COMPAT" "$compat" "$KV_ROOT/requirements/py311.txt"
    else
        kv_warn "no Python 3.11 found: no .venv-compat (the compat stage will be skipped)"
    fi
}

# The execution node's venv: on Debian's own Python, which a test node (its own /root, where pyenv lives) can run.
kv_bootstrap_execution_node_venv() {
    if ! kv_py_ok /usr/bin/python3 9; then
        kv_warn "no /usr/bin/python3 (3.9+): no .build/venv-execution-node (tests/e2e/test_storm_sliced.py needs it)"
        return 0
    fi
    kv_ensure_venv_module /usr/bin/python3
    kv_venv "$KV_BUILD/venv-execution-node" /usr/bin/python3 "$KV_ROOT/requirements/execution-node.txt"
}

# awx.awx from the ansible package's wheel (Galaxy is not reachable from CI): the wheel's ansible_collections/awx/awx
# directory, installed with ansible-galaxy; redone when requirements/awx-collection.txt changes.
kv_bootstrap_awx_collection() {
    local req=$KV_ROOT/requirements/awx-collection.txt stamp=$KV_BUILD/awx-collection.stamp pin want tmp out
    want=$(kv_sha256 "$req")
    if [ -f "$KV_COLLECTIONS/ansible_collections/awx/awx/MANIFEST.json" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    pin=$(sed -n 's/^\(ansible==[0-9.]*\).*/\1/p' "$req")
    kv_log "installing awx.awx from the $pin wheel into .build/collections"
    tmp=$(mktemp -d)
    # (ansible-galaxy warns that the path "appears to be part of the pip Ansible package": it is ours, kept quiet)
    if ! out=$({ "$KV_VENV/bin/python" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$pin" \
                && "$KV_VENV/bin/python" -m zipfile -e "$tmp"/ansible-*.whl "$tmp/wheel" \
                && "$KV_VENV/bin/ansible-galaxy" collection install --force -p "$KV_COLLECTIONS" \
                    "$tmp/wheel/ansible_collections/awx/awx"; } 2>&1); then
        rm -rf "$tmp"
        printf '%s\n' "$out" | kv_pip_filter >&2
        kv_die "could not install awx.awx from $pin (requirements/awx-collection.txt)"
    fi
    rm -rf "$tmp"
    echo "$want" >"$stamp"
}

kv_bootstrap() {
    mkdir -p "$KV_BUILD"
    kv_bootstrap_apt
    kv_bootstrap_venvs
    kv_bootstrap_execution_node_venv
    kv_collection_link
    kv_bootstrap_awx_collection
    kv_env
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    kv_bootstrap
    kv_log "ready: $(kv_ansible_version "$KV_VENV/bin")"
    kv_log "for this shell: . scripts/bootstrap.sh"
elif [ "${1:-}" != --functions-only ]; then
    kv_bootstrap
fi
