"""Make this checkout importable as ansible_collections.kubevol.volumes.

Tests always use the checkout itself, never an installed copy: a symlink
.build/collections/ansible_collections/kubevol/volumes -> checkout is created
on first use and put first on sys.path (and exported for subprocesses).
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".build", "collections")


def _ensure_collection_link():
    ns_dir = os.path.join(COLLECTIONS, "ansible_collections", "kubevol")
    link = os.path.join(ns_dir, "volumes")
    os.makedirs(ns_dir, exist_ok=True)
    if not os.path.islink(link) or os.path.realpath(link) != REPO:
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(REPO, link)
    for parent in (os.path.join(COLLECTIONS, "ansible_collections"), ns_dir):
        init = os.path.join(parent, "__init__.py")
        if os.path.exists(init):
            os.unlink(init)


_ensure_collection_link()
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (COLLECTIONS, os.environ.get("PYTHONPATH")) if p)
os.environ["ANSIBLE_COLLECTIONS_PATH"] = COLLECTIONS
