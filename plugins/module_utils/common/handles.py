# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A CSI volume handle: what it may be, where it becomes a name, and how a message shows it.

A handle is opaque (CSI spec, CreateVolumeResponse volume_id): a GKE persistent disk's is
``projects/<p>/zones/<z>/disks/<d>``, an Azure disk's ``/subscriptions/...``, csi-driver-nfs's ``<server>#<share>#...``,
ceph-csi's ``0001-0009-rook-ceph-...``. The API server checks only that it is not empty (pkg/apis/core/validation
validateCSIPersistentVolumeSource; the object's size bounds its length), and the kubelet never makes it a path
component: the global mount directory is ``<driver>/<sha256(handle)>/globalmount`` (pkg/volume/csi/csi_attacher.go
makeDeviceMountPath) and the VolumeAttachment's name is a hash too (getAttachmentName). kubevol does the same: every
file or directory named after a handle is named after its sha256 (``handle_hash``), and a message shows a handle
through ``show_handle``, never whole (a handle may be long, or hold characters a terminal would act on).

Only a driver that keeps a volume in a file named after its handle (the loop driver: ``<pool>/<handle>``) asks
more of it, and says so on its class (drivers/base.py ``Driver.HANDLE_IS_FILE_NAME``, ``handle_refusal``).
Pure code with no kubevol import: the planner, the node code and the errors all use it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

SHOWN_CHARACTERS = 40  # of a handle in a message
SHOWN_DIGEST = 12  # hex digits of its sha256 beside a shortened handle
_CSI_PREFIX = "kubernetes.io/csi/"
_SEP = "^"


def handle_hash(volume_handle):
    """hex(sha256(handle)): the name kubevol (and the kubelet) give anything named after a handle."""
    return hashlib.sha256(volume_handle.encode("utf-8")).hexdigest()


def _escaped(text):
    """``text`` with every character a terminal would not print as itself written as a Python escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def show_handle(volume_handle):
    """A handle as a message shows it (characters a terminal would not print as themselves escaped): whole when at
    most SHOWN_CHARACTERS long, else its first SHOWN_CHARACTERS characters, ``...``, its length and its sha256 prefix,
    which identify it (the sha256 is the name of its directories on the node)."""
    if not isinstance(volume_handle, str):
        return _escaped(repr(volume_handle)[:SHOWN_CHARACTERS])
    if len(volume_handle) <= SHOWN_CHARACTERS:
        return _escaped(volume_handle)
    head = _escaped(volume_handle[:SHOWN_CHARACTERS])[:SHOWN_CHARACTERS]
    digest = hashlib.sha256(volume_handle.encode("utf-8", "surrogatepass")).hexdigest()[:SHOWN_DIGEST]
    return "%s... (%d characters, sha256 %s)" % (head, len(volume_handle), digest)


def quote_handle(volume_handle):
    """show_handle's text in quotes, for a message where a handle stands beside other words (it may hold spaces)."""
    return "'%s'" % show_handle(volume_handle)


def show_volume_name(unique_name):
    """A unique volume name as a message shows it: a CSI name's handle through show_handle
    (``kubernetes.io/csi/<driver>^<handle>``); another plugin's name (``<plugin>/<PV name>``, at most a PV name long)
    escaped, and cut as a handle only past that."""
    if isinstance(unique_name, str) and unique_name.startswith(_CSI_PREFIX) and _SEP in unique_name:
        head, handle = unique_name.split(_SEP, 1)
        return "%s%s%s" % (_escaped(head[:SHOWN_CHARACTERS * 2]), _SEP, show_handle(handle))
    if isinstance(unique_name, str) and len(unique_name) <= 320:
        return _escaped(unique_name)
    return show_handle(unique_name)


def handle_problem(volume_handle):
    """Why ``volume_handle`` is no CSI volume handle at all, or None: it must be a non-empty string (the API server's
    rule) of Unicode text (the API serves UTF-8 only, and CSI's volume_id is a protobuf string, which must be)."""
    if not isinstance(volume_handle, str) or volume_handle == "":
        return "a volume handle must be a non-empty string"
    try:
        volume_handle.encode("utf-8")
    except UnicodeEncodeError:
        return "a volume handle must be Unicode text (it holds a lone surrogate, which no API server sends)"
    return None
