# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a volume fails when an external CSI driver fails it: kubevol errors the node code records.

Kubernetes: pkg/volume/csi/csi_client.go ``isFinalError`` and the kubelet's use of it (csi_attacher.go
MountDevice, csi_mounter.go SetUpAt, expander.go: a non-final status is
``volumetypes.NewUncertainProgressError``: the mount or device is kept as "maybe mounted", retried or torn
down, never assumed absent), the external-attacher's and -resizer's retries.

- ``CsiVolumeFailed``: a final gRPC status: the driver refused or failed; nothing was done. Carries the
  driver's code (``grpc_code``) and message. KV-CSI-CALL.
- ``CsiVolumeUncertain``: a non-final status (DEADLINE_EXCEEDED, UNAVAILABLE, CANCELLED, ABORTED,
  RESOURCE_EXHAUSTED): the driver may have done it, or still be doing it. ``uncertain`` is True: the node code
  records the volume's state as uncertain (the kubelet's "uncertain" mount/device), so the next run retries the
  same call or tears it down. KV-CSI-CALL.
- ``CsiDriverUnreachable``: no socket, nothing listening, no gRPC answer, no registration: names the socket
  path and what to check. No call was sent. KV-CSI-UNREACHABLE.
- ``CsiDriverRefused``: kubevol's own refusal before any mutating call (wrong driver at the socket, not ready,
  a controller it cannot reach, an access mode CSI cannot express, the Python packages missing). KV-CSI-REFUSED.

Each ends with its own kubevol code (docs/errors.md), and the result's ``code`` is that code; the gRPC status the
driver answered, if any, is the result's ``grpc_code`` (null when no call was answered).

Every one names the volume, the node and the driver, and carries no request: the CSI client replaces every
secret value in the driver's message by <redacted>, and nothing here ever formats a secret.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    CODE, CsiDependencyError, CsiSocketError, CsiUncertainError)


class CsiVolumeError(KubevolError):
    """Base: ``uncertain`` False means the driver surely did nothing."""

    uncertain = False
    code = CODE  # csi/errors.py's: a CSI call failed, final or uncertain
    message = "volume {volume} on node {node}: {detail}"


class CsiVolumeFailed(CsiVolumeError):
    """A final gRPC status: the volume fails with the driver's code and message."""


class CsiVolumeUncertain(CsiVolumeError):
    """A non-final gRPC status: the outcome is uncertain (the kubelet's UncertainProgressError)."""

    uncertain = True


class CsiDriverUnreachable(CsiVolumeError):
    """The driver's socket is missing or does not answer: no call was made."""

    code = "KV-CSI-UNREACHABLE"


class CsiDriverRefused(CsiVolumeError):
    """kubevol refuses before making a mutating call."""

    code = "KV-CSI-REFUSED"


# Calls that change nothing: when one of them fails, even with a non-final status, no volume operation was sent,
# so the volume is not uncertain (the kubelet returns such errors as plain, finished failures: csi_mounter.go
# SetUpAt "failed to check for STAGE_UNSTAGE_VOLUME capability").
READ_ONLY_METHODS = ("GetPluginInfo", "GetPluginCapabilities", "Probe", "NodeGetInfo", "NodeGetCapabilities",
                     "ControllerGetCapabilities")
NOTHING_SENT = ("no volume operation was sent, so nothing was done; check that the driver runs and answers (its log), "
                "then run again")


def from_csi(exc, volume, node, driver):
    """The kubevol error of a csi.errors.CsiError raised for ``volume`` (its PV name) on ``node``: its text without
    the CSI client's code, which the class's own replaces; the gRPC status as ``grpc_code``."""
    detail = getattr(exc, "text", None) or str(exc)
    hint = getattr(exc, "hint", "") or ""
    method = getattr(exc, "method", "") or ""
    if isinstance(exc, CsiDependencyError):
        cls = CsiDriverRefused
    elif isinstance(exc, CsiSocketError):
        cls = CsiDriverUnreachable
    elif method in READ_ONLY_METHODS:
        cls = CsiVolumeFailed
        if not getattr(exc, "final", True):
            detail = detail.replace(hint, NOTHING_SENT) if hint else detail + "; " + NOTHING_SENT
            hint = NOTHING_SENT
    elif isinstance(exc, CsiUncertainError) or not getattr(exc, "final", True):
        cls = CsiVolumeUncertain
    else:
        cls = CsiVolumeFailed
    return cls(volume=volume, node=node, driver=driver, detail=detail, step=method,
               grpc_code=getattr(exc, "code", None) or None, socket=getattr(exc, "socket", "") or "", hint=hint,
               uncertain=cls.uncertain)


def refused(volume, node, driver, detail, step, hint=""):
    """A refusal of kubevol's own: ``detail`` says what and why, ``hint`` what to do."""
    text = detail + ("; " + hint if hint else "")
    return CsiDriverRefused(volume=volume, node=node, driver=driver, detail=text, step=step, hint=hint,
                            grpc_code=None, uncertain=False)
