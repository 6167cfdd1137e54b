# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a CSI call failed, classified as the kubelet classifies it.

Kubernetes: pkg/volume/csi/csi_client.go ``isFinalError``: a gRPC status of CANCELED, DEADLINE_EXCEEDED,
UNAVAILABLE, RESOURCE_EXHAUSTED or ABORTED is not final (the driver may have done, or may still be doing,
what was asked: the operation is uncertain and must be retried or undone), every other status is final (the
driver refused or failed: nothing was done), and an error that is no gRPC status (the call was never made)
is final. The kubelet then keeps an uncertain mount or device as "maybe mounted" (csi_attacher.go
MountDevice, csi_mounter.go SetUpAt: ``volumetypes.NewUncertainProgressError``).

No exception here carries a request: only the method, the socket, the volume id, the gRPC code and the
driver's message with every secret value of the request replaced (see ``redact``). The volume id is shown as
common/handles.py shows a handle (cut, with its sha256, when long), in the driver's message too.
"""

from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import SHOWN_CHARACTERS, show_handle

# kubelet csi_client.go isFinalError: the codes after which the operation may be in progress.
NON_FINAL_CODES = ("CANCELLED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "ABORTED")
REDACTED = "<redacted>"
# the code a failed CSI call's message ends with: docs/errors.md says why the volume stops there, final or uncertain
CODE = "KV-CSI-CALL"
INSTALL_HINT = ("install the Python packages grpcio and protobuf for this interpreter "
                "(Debian/Ubuntu: apt-get install python3-grpcio python3-protobuf; pip: pip install grpcio protobuf)")


def redact(text, secrets):
    """``text`` with every secret value replaced by <redacted> (longest first, so none is left in part)."""
    text = str(text)
    for value in sorted((v for v in secrets if v), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


class CsiError(Exception):
    """A CSI call failed. ``final`` says whether the driver surely did nothing (True) or may have (False). Its text is
    one sentence: the call, the volume, driver, node and socket, the gRPC code and the driver's message, then
    ``hint`` (what to do, as written: drivers/external/errors.py finds it in the text), then the code ``[KV-CSI-CALL]``;
    ``text`` is the same without the code."""

    final = True

    def __init__(self, method, socket, message, code=None, volume_id="", hint="", driver="", node=""):
        self.method = method
        self.socket = socket
        self.code = code
        self.details = message
        self.volume_id = volume_id
        self.hint = hint
        self.driver = driver
        self.node = node
        self.text = self._text()  # without the code: drivers/external/errors.py ends it with its own
        Exception.__init__(self, "%s [%s]" % (self.text, CODE))

    def _text(self):
        where = "CSI %s" % self.method
        details = self.details
        if self.volume_id:
            shown = show_handle(self.volume_id)
            where += " of volume %s" % shown
            if len(self.volume_id) > SHOWN_CHARACTERS and self.volume_id in details:
                details = details.replace(self.volume_id, shown)
        if self.driver:
            where += " by driver %s" % self.driver
        if self.node:
            where += " on node %s" % self.node
        where += " (socket %s)" % self.socket
        text = "%s failed: %s%s" % (where, "%s: " % self.code if self.code else "", details)
        if self.hint:
            text += "; " + self.hint
        return text

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.args[0])


class CsiFinalError(CsiError):
    """The driver answered with a final gRPC status, or the call was never made: nothing was done."""

    final = True


class CsiSocketError(CsiFinalError):
    """The socket is missing, is no socket, refuses connections or does not answer: no call was sent."""


class CsiUncertainError(CsiError):
    """A non-final gRPC status (NON_FINAL_CODES): the driver may have done, or still be doing, the operation."""

    final = False


class CsiDependencyError(CsiError):
    """grpcio or protobuf cannot be imported: no call was made."""

    def __init__(self, reason):
        CsiError.__init__(self, "(any call)", "-", "%s (%s)" % (INSTALL_HINT, reason))

    def _text(self):
        return "the CSI client cannot run: %s" % self.details
