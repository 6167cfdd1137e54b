#!/usr/bin/env bash
# Stage test.d/30-molecule: `molecule test --all` from the collection root (scenarios in
# extensions/molecule/; `default` runs the reconcile role on 3 local SSH test nodes with real
# loop devices). Needs root. Fails when molecule fails; writes $KUBEVOL_REPORTS/molecule.xml
# (one test case per scenario action). Runs standalone too: scripts/test.d/30-molecule.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/lib.sh"

kv_is_root || { echo "molecule needs root (test nodes: mount namespaces, loop devices)"; exit 1; }
if [ ! -x "$KV_VENV/bin/molecule" ]; then
    echo "no $KV_VENV/bin/molecule: run scripts/bootstrap.sh first"; exit 1
fi
kv_collection_link
kv_env   # ANSIBLE_HOME, XDG_CACHE_HOME, ANSIBLE_LOCAL_TEMP under .build; .venv/bin first on PATH

# The nodes' state dir: short (ssh ControlPath sockets live in it), per run, and under
# /tmp/kubevol-* so that test.sh's leftovers check watches it.
KUBEVOL_MOLECULE_NODES=/tmp/kubevol-molecule-$$
export KUBEVOL_MOLECULE_NODES
# Molecule's own files (ephemeral dirs, generated ansible.cfg and inventory) go to
# $ANSIBLE_HOME/tmp/molecule.*.<scenario>, under .build.
KUBEVOL_REPORTS=${KUBEVOL_REPORTS:-$KV_BUILD/reports}
log=$KV_BUILD/reports/molecule.log
mkdir -p "$KUBEVOL_REPORTS" "$(dirname "$log")"

# shellcheck disable=SC2317  # called by the trap
cleanup() {
    # molecule destroys on failure too; this covers Ctrl-C and crashes of molecule itself.
    if [ -d "$KUBEVOL_MOLECULE_NODES" ]; then
        "$KV_VENV/bin/python" "$KV_ROOT/scripts/testnodes.py" down --state-dir "$KUBEVOL_MOLECULE_NODES" --purge || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$KV_ROOT"
rc=0
start=$SECONDS
molecule test --all 2>&1 | tee "$log" || rc=$?
secs=$((SECONDS - start))

# JUnit: "<scenario> ➜ <action>: Executed: <result>" lines of molecule's closing report.
"$KV_VENV/bin/python" - "$log" "$KUBEVOL_REPORTS/molecule.xml" "$rc" "$secs" <<'PY'
import re, sys
import xml.etree.ElementTree as ET
log, out, rc, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = re.sub(r"\x1b\[[0-9;]*m", "", open(log, errors="replace").read())
cases = {}
for m in re.finditer(r"^(?:\w+\s+)?(\S+) \u279c (\w+): Executed: (.*)$", text, re.M):
    cases[(m.group(1), m.group(2))] = m.group(3).strip()  # the last word on an action wins
suite = ET.Element("testsuite", name="molecule", time=secs)
failures = 0
for (scenario, action), result in cases.items():
    case = ET.SubElement(suite, "testcase", classname="molecule." + scenario, name=action)
    if result.startswith("Failed"):
        failures += 1
        ET.SubElement(case, "failure", message=result[:500])
    elif not result.startswith("Successful"):
        ET.SubElement(case, "skipped", message=result[:500])
if rc != 0 and failures == 0:
    failures += 1
    case = ET.SubElement(suite, "testcase", classname="molecule", name="molecule test")
    ET.SubElement(case, "failure", message="molecule exited with %d" % rc)
suite.set("tests", str(len(suite)))
suite.set("failures", str(failures))
suite.set("skipped", str(len(suite.findall("testcase/skipped"))))
ET.ElementTree(suite).write(out, encoding="unicode")
PY
exit $rc
