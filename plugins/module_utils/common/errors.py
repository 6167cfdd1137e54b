# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exception family for kubevol, os-brick style.

Each class has a ``message`` template filled from keyword arguments, so every
error says what failed, where, and what to do. Only a module's ``main()`` turns
these into ``fail_json``; library code raises and never exits.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class KubevolError(Exception):
    """Base class. ``message`` is a ``str.format`` template over the kwargs; ``code`` (``KV-...``) names the kind of
    failure, which docs/errors.md explains. A remedy that names a setting writes it as a common/words.py token, said
    in the reader's words where the message is shown."""

    message = "kubevol error: {detail}"
    code = None

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.message.format(**kwargs)
            except (KeyError, IndexError, ValueError):
                message = "%s: %r" % (self.message, kwargs)
        self.text = message  # without its code, for a message that quotes it and ends with the code itself
        if self.code and "[%s]" % self.code not in message:
            # the message says what, where and what to do; its code links the why (docs/errors.md)
            message = "%s [%s]" % (message, self.code)
        self.msg = message
        super(KubevolError, self).__init__(message)

    def to_result(self):
        """The fields a module adds to fail_json besides msg."""
        result = dict((k, v) for k, v in self.kwargs.items()
                      if isinstance(v, (str, int, float, bool, list, dict, type(None))))
        if self.code:
            result["code"] = self.code
        return result


class InvalidInput(KubevolError):
    message = "invalid {field}: {value!r}: {reason}"


class SettingRefused(InvalidInput):
    """A setting's value kubevol cannot use (``field``: the setting's common/words.py token, said as the module's
    option or the role's variable where the message is shown; ``reason``: what it must be)."""
    message = "{field} {value!r} is refused: it {reason}"
    code = "KV-SETTING"


class UnsafeName(InvalidInput):
    message = ("refusing {field} {value!r}: {reason}; names must be a single path component "
               "(no '/', '..', NUL or control characters)")


class HandleRefused(UnsafeName):
    """A volume handle the volume's own driver cannot take (drivers/base.py ``Driver.handle_refusal``: the loop driver
    names a file after it); any other driver takes every handle the API accepts. ``value``: the handle as
    common/handles.py show_handle shows it, never whole."""
    message = ("volume {volume} on node {node}: volume handle '{value}' refused: {reason}; give the PV a "
               "csi.volumeHandle that is one plain file name")
    code = "KV-HANDLE-REFUSED"


class StalePathRefused(InvalidInput):
    """A stale path volume_detach will not remove (stale.check_paths): nothing was removed."""
    message = ("refusing stale_paths entry {value!r} on node {node}: {reason}. Nothing was removed: kubevol removes only "
               "the empty volume directories the planner finds on this node (volume_reconcile_plan's stale_paths, which "
               "the reconcile role passes). Check what the path is and remove it by hand if it is not needed")


class UnsafePath(KubevolError):
    """A path inside the kubelet directory that is not a chain of real directories (a symlink, a file)."""
    message = ("refusing {path} on node {node}: {reason}; kubevol creates, writes and mounts only on real directories "
               "inside {kubelet_dir} (the kubelet directory, or a loop pool), never through a symlink. Check what put "
               "it there and remove it by hand")


class VolumeInUse(KubevolError):
    """The backend refuses to attach an image another node holds (a cloud disk API's VolumeInUse)."""
    message = ("attach of volume {volume} on node {node} refused: image {image} is held by {holders} and the volume "
               "allows one node only (ReadWriteOnce). Nothing was attached or adopted; node {node} waits until that "
               "hold is released on the holding node itself, by its own detach (volume_detach there: the reconcile's "
               "cleanup when that node comes back), or by the operator, only for a node that is down for good with "
               "its devices gone: {release}. The out-of-service taint alone does not release it")


class MalformedObject(KubevolError):
    message = "{kind} {name}: field {field}: {reason}"


class QuantityError(InvalidInput):
    message = "invalid quantity {value!r} in {field}: {reason}"


class UnknownDriver(KubevolError):
    message = ("unknown volume driver {driver!r} for volume {volume}: kubevol has no backend for it "
               "(known: {known}); use a PV whose spec.csi.driver is one of those")


class NoBackend(KubevolError):
    """A volume item whose driver the node has no backend for: never skipped, never reported done."""
    message = ("volume {volume} on node {node}: driver {driver} cannot be served there: kubevol on node {node} has no "
               "backend for {driver} (it drives {known}); nothing was attached, mounted, grown or detached for this "
               "volume. If {driver}'s own CSI node plugin serves it, remove {driver} from @{{known_drivers}} (the "
               "planner then leaves its volumes alone); otherwise use a PV whose spec.csi.driver kubevol drives")


class CommandFailed(KubevolError):
    message = ("{step} failed on node {node} for volume {volume}: `{cmd}` exited {rc}: {stderr}"
               "{hint}")

    def __init__(self, message=None, **kwargs):
        hint = kwargs.get("hint")
        kwargs["hint"] = ("; " + hint) if hint else ""
        super(CommandFailed, self).__init__(message, **kwargs)


class DeviceNotFound(KubevolError):
    message = "{step} on node {node}: no device for volume {volume}: {reason}"


class UnsafeToFormat(KubevolError):
    message = ("refusing to format {device} for volume {volume} on node {node}: {reason}; "
               "kubevol formats only a device that every probe reports blank")


class FilesystemMismatch(KubevolError):
    """The device holds a filesystem of another type than the volume's fsType (mount-utils FilesystemMismatch)."""
    message = ("mount of volume {volume} on node {node} refused: failed to mount the volume as \"{expected}\", it already "
               "contains {found} ({device}). Nothing was mounted or formatted; the data is kept. If {found} is right, "
               "set the PV's spec.csi.fsType (the volume's fs_type) to {found}; if the volume must be {expected}, move "
               "the data to a new {expected} volume (force=true erases the device: only for a volume whose data "
               "is not wanted)")


class StillMounted(KubevolError):
    message = ("refusing to {step} volume {volume} on node {node}: still mounted at {paths}; "
               "unmount those pods first or set force=true if the node is fenced")


class GrowPending(KubevolError):
    """A node-side grow that failed or cannot run yet (node/expand.py): the volume's grow is pending, as the kubelet
    leaves a claim FileSystemResizePending; never the node's failure. ``reason`` is the claim condition's."""
    code = "KV-GROW-PENDING"
    message = "volume {volume} on node {node}: the filesystem was not grown: {detail}; {remedy}"


class LockTimeout(KubevolError):
    message = ("volume {volume} on node {node} is locked by another kubevol run ({lock}); "
               "waited {timeout}s; retry when that run ends")


class ParseError(KubevolError):
    message = "could not parse output of `{cmd}`: {reason}: {output!r}"
