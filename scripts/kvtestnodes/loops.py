"""The loop devices of a state directory: found by backing file, unmounted everywhere, detached.

The kernel is shared: every node (and the host) sees every loop device. A loop
device is ours when its backing file is a file of this state directory, by
(st_dev, st_ino) and never by path text (a node sees the pool under another
path), or a file on a node-private filesystem (overlay, /run tmpfs) recorded
in nodes.json. The pool is shared, so loop devices belong to the state
directory, not to one node: only `down` detaches them.
"""

import contextlib
import json
import os
import time

from .base import log, run, warn
from .mounts import read_mountinfo, unmount_in_ns
from .procs import all_pids, is_running, ns_id, own_ns


def parse_losetup(text):
    """Loop devices from `losetup -J --list -O NAME,MAJ:MIN,BACK-INO,BACK-MAJ:MIN,BACK-FILE`:
    name, majmin, back (st_dev, st_ino), back_dev, back_file. Entries without a
    backing inode or device (a detached or odd entry) are left out."""
    if not text.strip():
        return []
    loops = []
    for dev in json.loads(text).get("loopdevices", []):
        try:
            bmaj, bmin = (int(x) for x in str(dev["back-maj:min"]).split(":"))
            ino = int(dev["back-ino"])
        except (KeyError, TypeError, ValueError):
            continue
        loops.append({
            "name": dev["name"],
            "majmin": str(dev.get("maj:min", "")).strip(),
            "back": (os.makedev(bmaj, bmin), ino),
            "back_dev": os.makedev(bmaj, bmin),
            "back_file": dev.get("back-file"),
        })
    return loops


def list_loops():
    """Attached loop devices: name, majmin, back (st_dev, st_ino)."""
    res = run(["losetup", "-J", "--list", "-O", "NAME,MAJ:MIN,BACK-INO,BACK-MAJ:MIN,BACK-FILE"],
              check=False)
    if res.returncode != 0:
        return []
    return parse_losetup(res.stdout)


def state_file_ids(layout):
    """(st_dev, st_ino) of every regular file in the state dir (pool, node dirs)."""
    ids = set()
    for top in (layout.pool, layout.nodes_dir):
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(dirpath, name))
                    ids.add((st.st_dev, st.st_ino))
    return ids


def our_loops(layout, state):
    """Loop devices backed by a file of this state dir (by device and inode,
    never by path text), or by a file on a node-private filesystem."""
    ids = state_file_ids(layout)
    private = {d for n in state["nodes"] for d in n.get("private_devs", [])}
    return [lp for lp in list_loops() if lp["back"] in ids or lp["back_dev"] in private]


def namespaces_representatives():
    """One live pid per mount namespace on the machine."""
    reps = {}
    for pid in all_pids():
        ns = ns_id(pid)
        if ns is not None and ns not in reps and is_running(pid):
            reps[ns] = pid
    return reps


def detach_loops(layout, state):
    """Unmount (in any namespace) and detach the loop devices of this state dir."""
    loops = our_loops(layout, state)
    if not loops:
        return []
    majmins = {lp["majmin"] for lp in loops}
    for ns, pid in namespaces_representatives().items():
        users = [m for m in read_mountinfo(pid) if m["majmin"] in majmins]
        if users:
            where = "host" if ns == own_ns() else "namespace of pid %d" % pid
            log("  unmounting %d loop mount(s) in %s" % (len(users), where))
            unmount_in_ns(pid, users, where)
    detached = []
    deadline = time.monotonic() + 5.0
    pending = loops
    while pending:
        for lp in pending:
            run(["losetup", "-d", lp["name"]], check=False)
        current = {lp["name"]: lp for lp in list_loops()}
        # Still attached with the same backing file: retry (the kernel may
        # still be releasing the last mount of a dead namespace).
        still = [lp for lp in pending
                 if lp["name"] in current and current[lp["name"]]["back"] == lp["back"]]
        detached.extend(lp["name"] for lp in pending if lp not in still)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                warn("could not detach %s (still in use?)" % ", ".join(lp["name"] for lp in pending))
                break
            time.sleep(0.1)
    return detached
