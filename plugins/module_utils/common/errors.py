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
    in the reader's words where the message is shown. A caller that knows more of where it failed, or what followed,
    adds it with ``add``, never by rewriting ``msg``: the code ends the message, once."""

    message = "kubevol error: {detail}"
    code = None

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.message.format(**kwargs)
            except (KeyError, IndexError, ValueError):
                message = "%s: %r" % (self.message, kwargs)
        if self.code and message.endswith(" [%s]" % self.code):
            message = message[:-len(" [%s]" % self.code)]
        self.text = message  # without its code, for a message that quotes it and ends with the code itself
        self._set_msg()
        super(KubevolError, self).__init__(self.msg)

    def _set_msg(self):
        message = self.text
        if self.code and "[%s]" % self.code not in message:
            # the message says what, where and what to do; its code links the why (docs/errors.md)
            message = "%s [%s]" % (message, self.code)
        self.msg = message
        self.args = (message,)

    def add(self, prefix="", suffix=""):
        """Add to the message: ``prefix`` before it (where, as the caller knows it), ``suffix`` after it (what
        follows from it), the code still appended last and once; ``text``, ``msg`` and str(err) say the same.
        Returns the error, to raise or report as it is."""
        self.text = "%s%s%s" % (prefix, self.text, suffix)
        self._set_msg()
        return self

    def quoted_in(self, outer):
        """This error's message as ``outer``'s message quotes it: without its code when ``outer``'s, which ends the
        whole, is the same, so that no code is said twice."""
        return self.text if self.code and self.code == getattr(outer, "code", None) else self.msg

    def to_result(self):
        """The fields a module adds to fail_json besides msg."""
        result = dict((k, v) for k, v in self.kwargs.items()
                      if isinstance(v, (str, int, float, bool, list, dict, type(None))))
        if self.code:
            result["code"] = self.code
        return result


class PlanRecordFailed(KubevolError):
    """The run's plan record (run/plan_record.py) could not be written, or what a later step of the run read back is
    not what its plan step wrote: the message names the record's run, the part and where it is kept, and what to do.
    Nothing was done from it on a node."""
    code = "KV-PLAN-RECORD"


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
    """A stale path volume_detach will not remove (stale.check_paths): nothing was removed. kubevol removes only the
    empty volume directories the planner finds on the node (volume_reconcile_plan's stale_paths)."""
    code = "KV-UNSAFE-PATH"
    message = ("refusing to remove stale path {value!r} on node {node}: {reason}; check what it is and remove it by "
               "hand if it is not needed")


class UnsafePath(KubevolError):
    """A path kubevol would create, write, mount or remove that is not what kubevol expects there: a symlink or a
    file where a directory belongs, a directory no record names as the volume's (a planted path). kubevol creates,
    writes and mounts only on real directories inside the kubelet directory or a loop pool, never through a
    symlink. ``reason`` says what was found."""
    code = "KV-UNSAFE-PATH"
    message = "refusing {path} on node {node}: {reason}; check what put it there and remove it by hand"


class ForeignMount(KubevolError):
    """A path kubevol mounts at is mounted already, from something else than the volume's own device or global
    mount: kubevol never unmounts or mounts over what it did not mount. ``what``: the kind of path (pod mount)."""
    code = "KV-FOREIGN-MOUNT"
    message = ("{what} at {target} on node {node} is mounted from {source}, not from {expected}; check what is "
               "mounted there and unmount it by hand")


class DeviceChanged(KubevolError):
    """A volume's global mount is mounted from another device than the one attached for it now (node facts
    ``device_mismatch``): nothing is mounted from it or over it."""
    code = "KV-DEVICE-CHANGED"
    message = ("global mount {path} of {kind} {volume} on node {node} is mounted from {source}, not from its device "
               "{device}; stop the pods that use it on node {node}, then run again")


class VolumeInUse(KubevolError):
    """The backend refuses to attach an image another node holds (a cloud disk API's VolumeInUse): nothing was
    attached or adopted. The hold is released by the holding node's own detach, or by the operator (``release``)
    only for a node down for good with its devices gone; the out-of-service taint alone does not release it."""
    code = "KV-MULTI-ATTACH"
    message = ("attach of volume {volume} on node {node} refused: image {image} is held by {holders}; wait for that "
               "node's own detach (stop the volume's pods there), or, only if that node is down for good, set "
               "{release}")


class MalformedObject(KubevolError):
    message = "{kind} {name}: field {field}: {reason}"


class QuantityError(InvalidInput):
    message = "invalid quantity {value!r} in {field}: {reason}"


class UnknownDriver(KubevolError):
    message = ("unknown volume driver {driver!r} for volume {volume}: kubevol has no backend for it "
               "(known: {known}); use a PV whose spec.csi.driver is one of those")


class NoBackend(KubevolError):
    """A volume item whose driver the node has no backend for: never skipped, never reported done."""
    message = ("volume {volume} on node {node}: driver {driver} cannot be served there, kubevol has no backend for it "
               "(it drives {known}); remove {driver} from @{{known_drivers}} if its own CSI node plugin serves it, or "
               "use a PV of a driver kubevol drives")


class CommandFailed(KubevolError):
    message = ("{step} failed on node {node} for volume {volume}: `{cmd}` exited {rc}: {stderr}"
               "{hint}")

    def __init__(self, message=None, **kwargs):
        hint = kwargs.get("hint")
        kwargs["hint"] = ("; " + hint) if hint else ""
        super(CommandFailed, self).__init__(message, **kwargs)


class CommandTimedOut(CommandFailed):
    """A node command killed at its time limit (node/runner.py): ``stderr`` says after how long, what was killed and
    which setting raises the limit."""
    code = "KV-COMMAND-TIMEOUT"
    message = "{step} on node {node} for volume {volume}: `{cmd}` {stderr}"


class MountBusy(CommandFailed):
    """umount refused with EBUSY: ``holders`` names the processes that use the mount (node/holders.py)."""
    code = "KV-MOUNT-BUSY"
    message = ("unmount of {target} on node {node} for volume {volume} refused, the mount is busy: {held}; stop "
               "those processes or move them off {target}, then run again")


class DeviceNotFound(KubevolError):
    message = "{step} on node {node}: no device for volume {volume}: {reason}"


class UnsafeToFormat(KubevolError):
    """kubevol formats only a device that every probe reports blank: ``reason`` says what was found, or which probe
    could not tell, and what to do."""
    code = "KV-UNSAFE-FORMAT"
    message = "refusing to format {device} for volume {volume} on node {node}: {reason}"


class FilesystemMismatch(KubevolError):
    """The device holds a filesystem of another type than the volume's fsType (mount-utils FilesystemMismatch):
    nothing was mounted or formatted, the data is kept."""
    code = "KV-FS-MISMATCH"
    message = ("mount of volume {volume} on node {node} refused: failed to mount the volume as \"{expected}\", it already "
               "contains {found} ({device}); set the PV's spec.csi.fsType to {found} if that is right, or move the "
               "data to a new {expected} volume")


class StillMounted(KubevolError):
    """A detach or unmount of a volume that pods still use on the node: nothing was unmounted or detached."""
    code = "KV-STILL-MOUNTED"
    message = "refusing to {step} volume {volume} on node {node}: it is still mounted at {paths}; {remedy}"

    def __init__(self, message=None, **kwargs):
        kwargs.setdefault("remedy", "stop the pods that use it there first")
        super(StillMounted, self).__init__(message, **kwargs)


class GrowPending(KubevolError):
    """A node-side grow that failed or cannot run yet (node/expand.py): the volume's grow is pending, as the kubelet
    leaves a claim FileSystemResizePending; never the node's failure. ``reason`` is the claim condition's."""
    code = "KV-GROW-PENDING"
    message = "volume {volume} on node {node}: the filesystem was not grown: {detail}; {remedy}"


class LockTimeout(KubevolError):
    message = ("volume {volume} on node {node} is locked by another kubevol run ({lock}), still after {timeout}s; run "
               "again when that run ends, or raise @{{lock_timeout}}")


class ParseError(KubevolError):
    message = "could not parse output of `{cmd}`: {reason}: {output!r}"
