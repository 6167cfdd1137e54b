# shellcheck shell=bash disable=SC2034  # the KV_* variables are used by the scripts that source this
# Shared helpers for kubevol's scripts (bootstrap.sh, test.sh, demo.sh). Source it; it defines
# functions and a few variables and runs nothing else.
#
#   KV_ROOT      the checkout (the collection root)
#   KV_BUILD     $KV_ROOT/.build: everything generated (venv stamps, caches, dist, reports, HOMEs)
#   KV_VENV      $KV_ROOT/.venv         controller venv: Python 3.12+, ansible-core 2.21
#   KV_COMPAT    $KV_ROOT/.venv-compat  compat venv: Python 3.11, ansible-core 2.19

KV_ROOT=${KV_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)}
KV_BUILD=$KV_ROOT/.build
KV_VENV=$KV_ROOT/.venv
KV_COMPAT=$KV_ROOT/.venv-compat
KV_COLLECTIONS=$KV_BUILD/collections
KV_NAMESPACE=kubevol
KV_NAME=volumes
KV_FQCN=$KV_NAMESPACE.$KV_NAME

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
    KV_BOLD=$'\e[1m' KV_RED=$'\e[31m' KV_GREEN=$'\e[32m' KV_YELLOW=$'\e[33m' KV_RESET=$'\e[0m'
else
    KV_BOLD='' KV_RED='' KV_GREEN='' KV_YELLOW='' KV_RESET=''
fi

kv_log() { printf '%s[kubevol]%s %s\n' "$KV_BOLD" "$KV_RESET" "$*" >&2; }
kv_warn() { printf '%s[kubevol] WARNING:%s %s\n' "$KV_YELLOW" "$KV_RESET" "$*" >&2; }
kv_die() { printf '%s[kubevol] ERROR:%s %s\n' "$KV_RED" "$KV_RESET" "$*" >&2; exit 1; }

kv_is_root() { [ "$(id -u)" -eq 0 ]; }

# kv_py_ok PYTHON MIN_MINOR [MAX_MINOR]: PYTHON runs and is 3.MIN_MINOR..3.MAX_MINOR.
kv_py_ok() {
    local py=$1 min=$2 max=${3:-99}
    [ -n "$py" ] || return 1
    "$py" -c "import sys; sys.exit(0 if (3, $min) <= sys.version_info[:2] <= (3, $max) else 1)" \
        >/dev/null 2>&1
}

# kv_find_python MIN_MINOR MAX_MINOR: print the first working interpreter in that range.
# Order: pyenv installs (newest patch of the lowest minor first), then python3.X on PATH (a pyenv
# shim fails its own check and is skipped), then python3. Real paths only: shims break in venvs.
kv_find_python() {
    local min=$1 max=$2 minor cand pyenv_root
    pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
    for ((minor = min; minor <= max; minor++)); do
        for cand in $(printf '%s\n' "$pyenv_root"/versions/3."$minor".* | sort -t. -k3,3nr); do
            [[ $cand =~ /3\.$minor\.[0-9]+$ ]] || continue   # skip 3.12-dev, 3.12.1t, envs, no match
            if kv_py_ok "$cand/bin/python3" "$minor" "$minor"; then echo "$cand/bin/python3"; return 0; fi
        done
        for cand in "/usr/local/bin/python3.$minor" "/usr/bin/python3.$minor" "$(command -v "python3.$minor" 2>/dev/null)"; do
            if kv_py_ok "$cand" "$minor" "$minor"; then
                "$cand" -c 'import sys; print(sys.executable)'; return 0
            fi
        done
    done
    for cand in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
        if kv_py_ok "$cand" "$min" "$max"; then "$cand" -c 'import sys; print(sys.executable)'; return 0; fi
    done
    return 1
}

# kv_pip_filter: drop pip's warnings about configured local (file:) indexes lacking a package.
kv_pip_filter() {
    grep -v "^WARNING: Location 'file:.* is ignored: it is neither a file nor a directory" || true
}

kv_sha256() { sha256sum "$@" | awk '{print $1}' | sha256sum | awk '{print $1}'; }

# kv_venv DIR PYTHON REQUIREMENTS: (re)create DIR from REQUIREMENTS with PYTHON, only when the
# stamp (hash of the requirements file + interpreter version) differs from the last good install.
kv_venv() {
    local dir=$1 py=$2 req=$3 stamp want
    want="$(kv_sha256 "$req") $("$py" -c 'import sys; print(sys.version.split()[0])') $req"
    stamp=$dir/.kubevol-stamp
    if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    kv_log "creating $(basename "$dir") with $py from ${req#"$KV_ROOT"/}"
    rm -rf "$dir"
    if ! "$py" -m venv "$dir"; then
        rm -rf "$dir"
        kv_die "'$py -m venv' failed (on Debian's own python: apt-get install python3-venv)"
    fi
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" 2>&1 \
        | kv_pip_filter
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then
        rm -rf "$dir"
        kv_die "pip install -r ${req#"$KV_ROOT"/} failed"
    fi
    echo "$want" >"$stamp"
}

# kv_collection_link: .build/collections/ansible_collections/kubevol/volumes -> checkout.
# Same layout as tests/conftest.py; no __init__.py in the parents (namespace packages).
kv_collection_link() {
    local ns=$KV_COLLECTIONS/ansible_collections/$KV_NAMESPACE link
    link=$ns/$KV_NAME
    mkdir -p "$ns"
    if [ "$(readlink "$link" 2>/dev/null)" != "$KV_ROOT" ]; then
        rm -rf "$link"
        ln -s "$KV_ROOT" "$link"
    fi
    rm -f "$KV_COLLECTIONS/ansible_collections/__init__.py" "$ns/__init__.py"
}

# kv_env: keep ansible, ansible-lint, molecule and pip caches inside .build, never in ~.
kv_env() {
    mkdir -p "$KV_BUILD/ansible-home" "$KV_BUILD/cache" "$KV_BUILD/ansible-tmp"
    export ANSIBLE_COLLECTIONS_PATH=$KV_COLLECTIONS
    export ANSIBLE_HOME=$KV_BUILD/ansible-home
    export XDG_CACHE_HOME=$KV_BUILD/cache
    export ANSIBLE_LOCAL_TEMP=$KV_BUILD/ansible-tmp
    export ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-$([ -t 1 ] && echo False || echo True)}
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    export PYTHONDONTWRITEBYTECODE=1
    export KUBEVOL_ROOT=$KV_ROOT
    if [ -x "$KV_VENV/bin/python" ]; then
        export VIRTUAL_ENV=$KV_VENV
        case ":$PATH:" in *":$KV_VENV/bin:"*) ;; *) export PATH=$KV_VENV/bin:$PATH ;; esac
    fi
}

# kv_copy_tree DEST: copy the collection's files (tracked + untracked, minus .gitignore'd) to DEST.
kv_copy_tree() {
    local dest=$1
    mkdir -p "$dest"
    if git -C "$KV_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$KV_ROOT" && git ls-files -z -co --exclude-standard \
            | while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done \
            | tar --null -T - -cf -) | tar -xf - -C "$dest"
    else
        (cd "$KV_ROOT" && tar -cf - --exclude=./.git --exclude=./.build --exclude='./.venv*' \
            --exclude=./tests/output --exclude=__pycache__ --exclude='*.pyc' .) | tar -xf - -C "$dest"
    fi
}

# kv_ansible_version BIN_DIR: "ansible [core X.Y.Z] on Python A.B.C" (reads the whole output:
# ansible --version fails with a broken pipe under `| head`).
kv_ansible_version() {
    local out
    out=$("$1/ansible" --version 2>&1) || true
    printf '%s on Python %s\n' "${out%%$'\n'*}" "$("$1/python" -c 'import platform; print(platform.python_version())')"
}
