"""The volume work of the test CSI plugin: image files in a pool, loop devices, mkfs, mount, grow.

Test code only (never shipped). Commands are argument lists. A loop device is found by the (st_dev, st_ino)
of its backing image (``losetup -J --list -O NAME,BACK-INO,BACK-MAJ:MIN``), never by path text: the kernel is
shared by every test node. A device that holds any signature is never formatted.
"""
import hashlib
import json
import os
import re
import subprocess

MiB = 1024 * 1024
DEFAULT_SIZE = 320 * MiB  # mkfs.xfs refuses less than 300 MB


class PluginError(Exception):
    """A gRPC status (code name) and message for the CO."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def run(*argv):
    proc = subprocess.run(list(argv), check=False, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=dict(os.environ, LC_ALL="C"))
    if proc.returncode != 0:
        raise PluginError("INTERNAL", "%s failed (rc %d): %s" % (" ".join(argv), proc.returncode,
                                                                 (proc.stderr or proc.stdout).strip()))
    return proc.stdout


def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts():
    """This namespace's mounts: dicts with majmin, root, target, fstype, source (mountinfo order)."""
    result = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _sep, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            result.append({"majmin": fields[2], "root": _unescape(fields[3]), "target": _unescape(fields[4]),
                           "fstype": tail[0], "source": _unescape(tail[1]) if len(tail) > 1 else ""})
    return result


def mount_at(path):
    """The top mount whose mount point is ``path``, or None."""
    path = os.path.realpath(path)
    found = [m for m in mounts() if m["target"] == path]
    return found[-1] if found else None


def majmin(device):
    st = os.stat(device)
    return "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))


def mounts_of(device):
    mm = majmin(device)
    return [m for m in mounts() if m["majmin"] == mm]


class Pool(object):
    """Volumes as sparse image files ``<pool>/<volume_id>.img`` (see ``image``); node and controller state in
    state.json.

    ``pool`` (default STATE/pool) may be shared by several plugins (a controller and the nodes' plugins, as the
    test nodes share /var/lib/kubevol/pool); the state dir is each plugin's own.
    """

    def __init__(self, state_dir, pool=None):
        self.state_dir = os.path.abspath(state_dir)
        self.pool = os.path.abspath(pool) if pool else os.path.join(self.state_dir, "pool")
        self.state_file = os.path.join(self.state_dir, "state.json")
        os.makedirs(self.pool, exist_ok=True)
        os.makedirs(self.state_dir, exist_ok=True)

    # -- state ---------------------------------------------------------------------------------
    def load(self):
        try:
            with open(self.state_file) as handle:
                return json.load(handle)
        except FileNotFoundError:
            return {"staged": {}, "published": {}, "node_attached": {}}

    def save(self, state):
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(state, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.state_file)

    # -- images and loop devices ---------------------------------------------------------------
    def image(self, volume_id, must_exist=True):
        """``<pool>/<volume_id>.img`` for a plain id; any other id (a volume id is opaque: ``projects/p/disks/d``,
        ``server#share#dir``, spaces) names ``<pool>/vol-<sha256(volume_id)>.img``, as real drivers map their ids."""
        if not volume_id:
            raise PluginError("INVALID_ARGUMENT", "volume_id is empty")
        if re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", volume_id) and len(volume_id) <= 200:
            path = os.path.join(self.pool, volume_id + ".img")
        else:
            path = os.path.join(self.pool, "vol-%s.img" % hashlib.sha256(volume_id.encode("utf-8")).hexdigest())
        if must_exist and not os.path.isfile(path):
            raise PluginError("NOT_FOUND", "volume %s does not exist (no %s)" % (volume_id, path))
        return path

    def create(self, name, required, limit):
        if limit and required > limit:
            raise PluginError("OUT_OF_RANGE", "required_bytes %d > limit_bytes %d" % (required, limit))
        size = required or DEFAULT_SIZE
        path = self.image(name, must_exist=False)
        if os.path.exists(path):
            have = os.path.getsize(path)
            if have < size or (limit and have > limit):
                raise PluginError("ALREADY_EXISTS", "volume %s exists with %d bytes" % (name, have))
            return have
        with open(path, "wb") as handle:
            handle.truncate(size)
        return size

    def delete(self, volume_id):
        path = self.image(volume_id, must_exist=False)
        if not os.path.exists(path):
            return
        device = self.find_loop(path)
        if device:
            raise PluginError("FAILED_PRECONDITION", "volume %s is attached as %s" % (volume_id, device))
        os.unlink(path)

    def find_loop(self, image):
        st = os.stat(image)
        key = ("%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), st.st_ino)
        out = run("losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN")
        for dev in (json.loads(out)["loopdevices"] if out.strip() else []):
            if (str(dev.get("back-maj:min") or "").strip(), int(dev.get("back-ino") or -1)) == key:
                return dev["name"]
        return None

    def attach(self, image):
        return self.find_loop(image) or run("losetup", "--find", "--show", image).strip()

    def detach(self, image, state):
        device = self.find_loop(image)
        if not device:
            return None
        users = [m["target"] for m in mounts_of(device)]
        users += [t for t, p in state["published"].items() if p.get("device") == device and p.get("block")]
        if users:
            raise PluginError("FAILED_PRECONDITION", "%s (%s) is still in use at %s" % (device, image, users))
        run("losetup", "-d", device)
        return device

    def check_device(self, device, image):
        if not device or self.find_loop(image) != device:
            raise PluginError("FAILED_PRECONDITION", "device %r is not the loop device of %s: "
                              "ControllerPublishVolume first" % (device, image))
        return device

    # -- filesystems -----------------------------------------------------------------------------
    def format_and_mount(self, device, target, mount_cap):
        """Mount ``device`` at ``target``, making ``fs_type`` first if and only if the device is blank."""
        want = mount_cap.get("fs_type") or "ext4"
        current = mount_at(target)
        if current is not None:
            if current["majmin"] != majmin(device):
                raise PluginError("ALREADY_EXISTS", "%s is already a mount of %s" % (target, current["source"]))
            return
        proc = subprocess.run(["blkid", "-p", "-o", "export", device], check=False, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        found = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
        if proc.returncode == 2:  # blkid -p: no signature at all
            run("mkfs." + want, "-q", device)
        elif proc.returncode != 0:
            raise PluginError("INTERNAL", "blkid -p %s failed: %s" % (device, proc.stderr.strip()))
        elif found.get("TYPE") != want:
            raise PluginError("FAILED_PRECONDITION", "%s holds %s, not %s: refusing to format or mount it"
                              % (device, found.get("TYPE") or found.get("PTTYPE") or "a signature", want))
        argv = ["mount", "-t", want]
        if mount_cap.get("mount_flags"):
            argv += ["-o", ",".join(mount_cap["mount_flags"])]
        run(*(argv + [device, target]))
        group = mount_cap.get("volume_mount_group")
        if group:  # VOLUME_MOUNT_GROUP: the volume's root belongs to that group, setgid, group-writable
            os.chown(target, -1, int(group))
            os.chmod(target, 0o2775)

    def grow_device(self, device):
        run("losetup", "-c", device)
        return int(run("blockdev", "--getsize64", device).strip())

    def grow_fs(self, device, volume_path):
        """Grow the filesystem on ``device``: online if mounted (xfs_growfs, resize2fs), else offline (ext4)."""
        mounted = mount_at(volume_path) if volume_path else None
        if mounted is None:
            users = mounts_of(device)
            mounted = users[0] if users else None
        if mounted is not None:
            if mounted["fstype"] == "xfs":
                run("xfs_growfs", mounted["target"])
            elif mounted["fstype"].startswith("ext"):
                run("resize2fs", device)  # online: needs CAP_SYS_RESOURCE (fails on this test machine)
            else:
                raise PluginError("INVALID_ARGUMENT", "cannot grow %s" % mounted["fstype"])
            return
        out = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", device], check=False,
                             stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
        if not out.startswith("ext"):
            raise PluginError("FAILED_PRECONDITION", "%s (%s) grows only while mounted" % (device, out or "blank"))
        run("e2fsck", "-f", "-p", device)
        run("resize2fs", device)
