#!/usr/bin/env bash
# THE test command for kubevol.volumes: bootstrap, then every stage in order, fail-fast, with a
# header per stage and a summary table at the end (always printed, also on failure or Ctrl-C).
#
#   scripts/test.sh                  all stages
#   scripts/test.sh unit lint        only these stages (bootstrap always runs)
#   scripts/test.sh --list           the stage names
#   KUBEVOL_KEEP_GOING=1 scripts/test.sh   run the remaining stages after a failure
#
# Stages: build doc sanity lint changelog unit compat integration, then one stage per executable
# scripts/test.d/*.sh (in name order). A stage passes with exit 0, is skipped with exit 77, and
# fails otherwise. pytest runs write JUnit files to $KUBEVOL_REPORTS; the closing line adds them up.
# Exit status: 0 only if no stage failed and no leftovers (loop devices, mounts, processes) remain.

set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"
# shellcheck source=scripts/bootstrap.sh
. "$KV_ROOT/scripts/bootstrap.sh" --functions-only

SKIP=77
KUBEVOL_REPORTS=$KV_BUILD/reports
export KUBEVOL_REPORTS

# ---------------------------------------------------------------------------------------------
# stages (each runs in a subshell with set -e; cwd is the checkout)

stage_build() {
    local dist=$KV_BUILD/dist
    rm -rf "$dist"
    ansible-galaxy collection build --force --output-path "$dist" "$KV_ROOT"
    local tarball
    tarball=$(ls "$dist"/"$KV_NAMESPACE"-"$KV_NAME"-*.tar.gz)
    # The artifact must hold the collection and nothing of the work tree's machinery.
    local listing
    listing=$(tar -tzf "$tarball")
    if grep -E '^(\.build|\.venv|\.git/|tests/output|\.ci)(/|$)|__pycache__' <<<"$listing"; then
        echo "the tarball holds the files above: add them to build_ignore in galaxy.yml"; return 1
    fi
    # Only what runs from the installed collection: scripts/ is left out, so are the tests that need it.
    if grep -E '^(scripts|bench|requirements|tests/e2e|tests/integration|extensions)(/|$)' <<<"$listing"; then
        echo "the tarball holds the files above, which need the work tree's scripts/: add them to build_ignore"
        return 1
    fi
    # Source only: a binary (a wheel, an image, compiled code) has no place in what users install; every file must
    # be UTF-8 text without NUL bytes.
    "$KV_VENV/bin/python" - "$tarball" <<'PY' || return 1
import sys, tarfile
binaries = []
with tarfile.open(sys.argv[1]) as tar:
    for member in tar:
        if not member.isfile():
            continue
        data = tar.extractfile(member).read()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            binaries.append(member.name)
            continue
        if b"\0" in data:
            binaries.append(member.name)
if binaries:
    print("the tarball holds binary files: %s; remove them or add them to build_ignore in galaxy.yml" % ", ".join(binaries))
    sys.exit(1)
PY
    # What a user installs from and what an execution environment is built from (ansible-builder).
    local f lacks=0
    for f in LICENSE README.md requirements.txt bindep.txt meta/runtime.yml meta/execution-environment.yml \
        playbooks/reconcile.yml playbooks/plan.yml playbooks/audit.yml roles/reconcile/meta/argument_specs.yml \
        examples/cluster.yaml; do
        grep -qx "$f" <<<"$listing" || { echo "the tarball lacks $f"; lacks=1; }
    done
    [ $lacks -eq 0 ] || return 1
    echo "$(tar -tzf "$tarball" | wc -l) entries, $(du -h "$tarball" | cut -f1): ${tarball#"$KV_ROOT"/}"
}

# Every module (plugins/modules/*.py) and every filter/test plugin must render with ansible-doc.
stage_doc() {
    kv_doc_check "$KV_VENV/bin"
}

kv_doc_check() {
    local bin=$1 out=$KV_BUILD/reports/ansible-doc
    local -a modules=() plugins=()
    local f name kind names
    mkdir -p "$out"
    for f in "$KV_ROOT"/plugins/modules/*.py; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .py)
        [ "$name" = __init__ ] || modules+=("$KV_FQCN.$name")
    done
    # the reconcile role's internal node modules: not listed by ansible-doc -l, still documented
    for f in "$KV_ROOT"/plugins/modules/__internal/*.py; do
        [ -e "$f" ] && modules+=("$KV_FQCN.__internal.$(basename "$f" .py)")
    done
    if [ ${#modules[@]} -eq 0 ]; then
        echo "no modules in plugins/modules"
    else
        kv_doc_run "$bin" module "${modules[@]}"
    fi
    for kind in filter test; do
        [ -d "$KV_ROOT/plugins/$kind" ] || continue
        names=$("$bin/python" - "$kind" <<'PY'
import glob, importlib, os, sys
kind = sys.argv[1]
root = os.environ["KUBEVOL_ROOT"]
sys.path.insert(0, os.environ["ANSIBLE_COLLECTIONS_PATH"])
cls = {"filter": "FilterModule", "test": "TestModule"}[kind]
for path in sorted(glob.glob(os.path.join(root, "plugins", kind, "*.py"))):
    mod = os.path.basename(path)[:-3]
    if mod == "__init__":
        continue
    m = importlib.import_module("ansible_collections.kubevol.volumes.plugins.%s.%s" % (kind, mod))
    obj = getattr(m, cls, None)
    if obj is None:
        continue
    for name in sorted(getattr(obj(), kind + "s")()):
        print("kubevol.volumes." + name)
PY
        ) || { echo "could not load the $kind plugins"; return 1; }
        mapfile -t plugins <<<"$names"
        [ -n "$names" ] || plugins=()
        if [ ${#plugins[@]} -gt 0 ]; then kv_doc_run "$bin" "$kind" "${plugins[@]}"; fi
    done
}

# kv_doc_run BIN TYPE FQCN...: all in one ansible-doc call (each call starts Ansible and loads its plugins); when that
# fails, one call per plugin so that the errors name the plugin.
kv_doc_run() {
    local bin=$1 type=$2 fqcn rc=0 log=$KV_BUILD/reports/ansible-doc
    shift 2
    if "$bin/ansible-doc" -t "$type" "$@" >"$log/$type.txt" 2>"$log/$type.err" \
        && ! grep -qE 'ERROR|WARNING' "$log/$type.err"; then
        for fqcn in "$@"; do
            if grep -q "$fqcn" "$log/$type.txt"; then printf '  ok    %-8s %s\n' "$type" "$fqcn"
            else printf '  FAIL  %-8s %s (not in the output)\n' "$type" "$fqcn"; rc=1; fi
        done
        return $rc
    fi
    for fqcn in "$@"; do
        if "$bin/ansible-doc" -t "$type" "$fqcn" >"$log/$fqcn.txt" 2>"$log/$fqcn.err" \
            && ! grep -qE 'ERROR|WARNING' "$log/$fqcn.err"; then
            printf '  ok    %-8s %s\n' "$type" "$fqcn"
        else
            printf '  FAIL  %-8s %s\n' "$type" "$fqcn"
            sed 's/^/        /' "$log/$fqcn.err" | head -n 20
            rc=1
        fi
    done
    return $rc
}

# ansible-test sanity on a real copy (ansible-test refuses a collection reached by a symlink), with
# its own HOME under .build so its venvs and caches persist between runs and stay out of ~.
stage_sanity() {
    local dest=$KV_BUILD/sanity/ansible_collections/$KV_NAMESPACE/$KV_NAME
    local home=$KV_BUILD/ansible-test-home pyver pipver cache
    pyver=$("$KV_VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    # Fresh files each run, but keep tests/output: ansible-test keeps its delegation venv there.
    if [ -d "$dest" ]; then
        find "$dest" -mindepth 1 -maxdepth 1 ! -name tests -exec rm -rf {} +
        find "$dest/tests" -mindepth 1 -maxdepth 1 ! -name output -exec rm -rf {} +
    fi
    kv_copy_tree "$dest"
    # ansible-test lists files with git from the nearest .git upwards, which would be the checkout's
    # (where .build is ignored: "All targets skipped"). Make the copy its own repository.
    git -C "$dest" init -q
    # ansible-test bootstraps pip in its venvs with a get-pip script it downloads from a host that
    # CI cannot reach. Give it a stand-in that installs the same pip from a wheel (from PyPI).
    pipver=$("$KV_VENV/bin/python" - <<'PY'
import inspect, re
from ansible_test._internal import python_requirements as pr
print(re.search(r"pip='([0-9.]+)'", inspect.getsource(pr.get_venv_packages)).group(1))
PY
    )
    cache=$home/.ansible/test/cache
    mkdir -p "$cache"
    if ! ls "$cache"/pip-"$pipver"-*.whl >/dev/null 2>&1; then
        "$KV_VENV/bin/python" -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" \
            "pip==$pipver" 2>&1 | kv_pip_filter
    fi
    cat >"$cache/get_pip_${pipver//./_}.py" <<'PY'
"""Stand-in for get-pip.py (written by kubevol's scripts/test.sh): install pip from the wheel
beside this file; other arguments are passed on to 'pip install'."""
import glob
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
wheel = sorted(glob.glob(os.path.join(here, "pip-*.whl")))[-1]
sys.path.insert(0, wheel)
from pip._internal.cli.main import main  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--find-links", here] + args))
PY
    cd "$dest"
    HOME=$home ansible-test sanity --venv --python "$pyver" --color "$([ -t 1 ] && echo yes || echo no)" \
        2>&1 | kv_pip_filter
}

stage_lint() {
    local -a paths=()
    local p
    for p in roles playbooks; do [ -d "$KV_ROOT/$p" ] && paths+=("$p"); done
    if [ ${#paths[@]} -eq 0 ]; then echo "no roles/ or playbooks/ yet"; return $SKIP; fi
    local -a color=()
    [ -t 1 ] || color=(--nocolor)
    ansible-lint --offline --profile production "${color[@]}" "${paths[@]}"
}

stage_changelog() {
    antsibull-changelog lint
    antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
}

# kv_pytest NAME PYTHON ARGS...: pytest with a JUnit report; "no tests collected" (5) fails.
kv_pytest() {
    local name=$1 py=$2 rc=0
    shift 2
    mkdir -p "$KUBEVOL_REPORTS"
    rm -f "$KUBEVOL_REPORTS/$name.xml"
    "$py" -m pytest -ra -p no:cacheprovider --junitxml="$KUBEVOL_REPORTS/$name.xml" \
        -o junit_family=xunit2 "$@" || rc=$?
    if [ $rc -eq 5 ]; then echo "pytest collected no tests in: $*"; return 1; fi
    return $rc
}

stage_unit() {
    [ -d tests/unit ] || { echo "tests/unit is missing"; return 1; }
    kv_pytest unit "$KV_VENV/bin/python" tests/unit
}

# The same unit tests on ansible-core 2.19 / Python 3.11, and the docs render there too.
stage_compat() {
    if [ -n "${KV_CONTROLLER_FALLBACK:-}" ]; then
        echo "the controller venv already is the 2.19 / 3.11 fallback"; return $SKIP
    fi
    [ -x "$KV_COMPAT/bin/python" ] || { echo "no .venv-compat (no Python 3.11 here)"; return $SKIP; }
    kv_ansible_version "$KV_COMPAT/bin"
    kv_pytest compat "$KV_COMPAT/bin/python" tests/unit
    kv_doc_check "$KV_COMPAT/bin"
}

stage_integration() {
    [ -d tests/integration ] || { echo "no tests/integration yet"; return $SKIP; }
    kv_is_root || { echo "needs root (loop devices, mounts)"; return 1; }
    kv_pytest integration "$KV_VENV/bin/python" tests/integration
}

stage_hook() {
    "$1"
}

# ---------------------------------------------------------------------------------------------
# runner

declare -a KV_STAGES=(build doc sanity lint changelog unit compat integration)
declare -A KV_HOOKS=()
for f in "$KV_ROOT"/scripts/test.d/*.sh; do
    [ -x "$f" ] || continue
    n=test.d/$(basename "$f" .sh)
    KV_STAGES+=("$n")
    KV_HOOKS[$n]=$f
done

if [ "${1:-}" = --list ] || [ "${1:-}" = -l ]; then printf '%s\n' "${KV_STAGES[@]}"; exit 0; fi
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
declare -a KV_WANTED=("$@")
for w in "${KV_WANTED[@]}"; do
    [[ " ${KV_STAGES[*]} " == *" $w "* ]] || kv_die "unknown stage '$w' (scripts/test.sh --list)"
done

declare -a KV_RESULTS=()   # "name result seconds"
KV_CURRENT=''
KV_START=$SECONDS
KV_FAILED=0

kv_header() {
    printf '\n%s==================== %s ====================%s\n' "$KV_BOLD" "$1" "$KV_RESET"
}

kv_record() { KV_RESULTS+=("$1 $2 $3"); }

# What the root-level tests must never leave behind, counting only what appeared during this run
# (other runs may share the machine): loop devices backed by files in the checkout or
# /tmp/kubevol-*, mounts there (compared with a snapshot taken at the start), and live processes
# started by this run (they inherit KUBEVOL_RUN_ID: sshd test nodes, ssh ControlPersist masters).
kv_loops_mounts() {
    losetup -l -n -O NAME,BACK-FILE 2>/dev/null \
        | awk -v r="$KV_ROOT/" 'index($2, r) == 1 || index($2, "/tmp/kubevol-") == 1 {print "loop  " $0}'
    findmnt -rn -o TARGET,SOURCE 2>/dev/null \
        | awk -v r="$KV_ROOT/" 'index($1, r) == 1 || index($1, "/tmp/kubevol-") == 1 {print "mount " $0}'
}

kv_leftovers() {
    local now new procs
    now=$(kv_loops_mounts)
    new=$(comm -13 <(sort <<<"$KV_SNAPSHOT") <(sort <<<"$now") | sed '/^$/d')
    procs=$("${KV_PY:-python3}" - "$KUBEVOL_RUN_ID" <<'PY'
import os, sys
tag = ("KUBEVOL_RUN_ID=" + sys.argv[1]).encode()
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    if int(pid) == os.getpid():
        continue
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            if tag not in f.read().split(b"\0"):
                continue
        with open("/proc/%s/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                continue
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        continue
    print("proc  %s %s" % (pid, args[:200]))
PY
    )
    [ -z "$new$procs" ] && return 0
    echo "LEFTOVERS (tests must clean up after themselves, also when they fail):"
    printf '%s\n' "$new" "$procs" | sed '/^$/d'
    return 1
}

kv_summary() {
    local rc=$? line name result secs color
    trap - EXIT INT TERM
    if [ -n "$KV_CURRENT" ]; then
        kv_record "$KV_CURRENT" "$([ $rc -ge 128 ] && echo INTERRUPTED || echo "FAIL($rc)")" \
            $((SECONDS - KV_STAGE_START))
        KV_FAILED=1
    fi
    kv_header leftovers
    local t=$SECONDS
    if ! kv_leftovers; then
        sleep 3   # a killed sshd stays a zombie ~2 s; a ControlPersist master may be closing
        if kv_leftovers >/dev/null; then echo "none (after a 3 s grace)"; kv_record leftovers PASS $((SECONDS - t))
        else kv_record leftovers FAIL $((SECONDS - t)); KV_FAILED=1; fi
    else
        echo none; kv_record leftovers PASS $((SECONDS - t))
    fi
    kv_header summary
    printf '%-28s %-12s %8s\n' STAGE RESULT SECONDS
    for line in "${KV_RESULTS[@]}"; do
        read -r name result secs <<<"$line"
        case $result in
            PASS) color=$KV_GREEN ;; SKIP | 'NOT-RUN') color=$KV_YELLOW ;; *) color=$KV_RED ;;
        esac
        printf '%-28s %s%-12s%s %8s\n' "$name" "$color" "$result" "$KV_RESET" "$secs"
    done
    printf '%-28s %-12s %8s\n' total "" $((SECONDS - KV_START))
    if [ $KV_FAILED -ne 0 ] || [ $rc -ne 0 ]; then
        echo "${KV_RED}FAILED${KV_RESET} (logs above; reports in ${KUBEVOL_REPORTS#"$KV_ROOT"/})"
        rc=1
    else
        echo "${KV_GREEN}ALL PASSED${KV_RESET}"
    fi
    # One closing line over every JUnit report the stages wrote (pytest's own lines are above).
    "${KV_PY:-python3}" - "$KUBEVOL_REPORTS" <<'PY' || true
import glob, os, sys
import xml.etree.ElementTree as ET
t = f = s = 0
for path in glob.glob(os.path.join(sys.argv[1], "**", "*.xml"), recursive=True):
    try:
        root = ET.parse(path).getroot()
    except Exception:
        continue
    for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        t += int(suite.get("tests", 0))
        f += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        s += int(suite.get("skipped", 0))
print("tests: %d passed, %d failed, %d skipped" % (t - f - s, f, s))
PY
    exit $rc
}

KUBEVOL_RUN_ID=$$-$(date +%s%N)
export KUBEVOL_RUN_ID
KV_SNAPSHOT=$(kv_loops_mounts)
trap kv_summary EXIT
trap 'exit 130' INT TERM

rm -rf "$KUBEVOL_REPORTS"
mkdir -p "$KUBEVOL_REPORTS"
cd "$KV_ROOT" || exit 1

kv_header bootstrap
KV_CURRENT=bootstrap KV_STAGE_START=$SECONDS
kv_bootstrap || exit 1
KV_PY=$KV_VENV/bin/python
kv_ansible_version "$KV_VENV/bin"
kv_record bootstrap PASS $((SECONDS - KV_STAGE_START))
KV_CURRENT=''

for stage in "${KV_STAGES[@]}"; do
    if [ ${#KV_WANTED[@]} -gt 0 ] && [[ " ${KV_WANTED[*]} " != *" $stage "* ]]; then continue; fi
    if [ $KV_FAILED -ne 0 ] && [ -z "${KUBEVOL_KEEP_GOING:-}" ]; then
        kv_record "$stage" NOT-RUN 0; continue
    fi
    kv_header "$stage"
    KV_CURRENT=$stage KV_STAGE_START=$SECONDS
    if [ -n "${KV_HOOKS[$stage]:-}" ]; then
        (set -e; cd "$KV_ROOT"; stage_hook "${KV_HOOKS[$stage]}")
    else
        (set -e; cd "$KV_ROOT"; "stage_$stage")
    fi
    rc=$?
    KV_CURRENT=''
    secs=$((SECONDS - KV_STAGE_START))
    case $rc in
        0) kv_record "$stage" PASS "$secs" ;;
        "$SKIP") kv_record "$stage" SKIP "$secs" ;;
        *) kv_record "$stage" "FAIL($rc)" "$secs"; KV_FAILED=1 ;;
    esac
done
