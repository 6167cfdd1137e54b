#!/usr/bin/env python
"""Print, per node module, what its AnsiballZ payload holds: the files Ansible's own finder puts in it (all of them,
and the collection's), their bytes, and which of the collection's module_utils they are (``--files``).

Ansible builds each module's payload once per run while every worker waits, and each node compiles every file in it
on every run (AnsiballZ imports from a zip, which keeps no bytecode): these counts are that cost's measure
(docs/performance.md). The files come from tests/unit/plugins/modules/payload_finder.py, Ansible's finder run in its
own process, as the payload test asks it.

    .venv/bin/python bench/bench_payload.py [--files] [--json]
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FINDER = os.path.join(REPO, "tests", "unit", "plugins", "modules", "payload_finder.py")
COLLECTIONS = os.path.join(REPO, ".build", "collections")
MODULES_DIR = os.path.join(REPO, "plugins", "modules")
NODE_MODULES = ["node_volume_info", "k8s_volume_attach", "node_volume_mount", "fs_expand", "volume_detach",
                "__internal.node_volume_setup", "__internal.csi_controller_calls", "__internal.volume_provision_calls"]
OURS = "ansible_collections/kubevol/volumes/"


def ensure_link():
    ns = os.path.join(COLLECTIONS, "ansible_collections", "kubevol")
    os.makedirs(ns, exist_ok=True)
    link = os.path.join(ns, "volumes")
    if not os.path.islink(link):
        os.symlink(REPO, link)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="list the collection's files of each payload")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ensure_link()
    out = subprocess.run([sys.executable, FINDER, "--sizes", COLLECTIONS, MODULES_DIR] + NODE_MODULES, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout
    found = json.loads(out)
    rows = {}
    for name in NODE_MODULES:
        sizes = found[name]
        files = [f for f in sizes if f.endswith(".py")]
        ours = [f for f in files if f.startswith(OURS)]
        rows[name] = {"files": len(files), "bytes": sum(sizes[f] for f in files),
                      "kubevol_files": len(ours), "kubevol_bytes": sum(sizes[f] for f in ours),
                      "kubevol": sorted(f[len(OURS):] for f in ours)}
    if args.json:
        print(json.dumps(rows, indent=1, sort_keys=True))
        return
    print("%-36s %6s %9s %8s %9s" % ("module", "files", "bytes", "kubevol", "kv bytes"))
    for name in NODE_MODULES:
        row = rows[name]
        print("%-36s %6d %9d %8d %9d" % (name, row["files"], row["bytes"], row["kubevol_files"], row["kubevol_bytes"]))
        if args.files:
            for path in row["kubevol"]:
                print("    " + path)


if __name__ == "__main__":
    main()
