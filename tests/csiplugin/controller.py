"""The test CSI plugin's provisioning side: CreateVolume (topology, clones, restores), DeleteVolume, CreateSnapshot,
DeleteSnapshot. Test code only (never shipped); plugin.py mixes it into its Plugin.

Each does real work in the pool (backend.py): a volume is a sparse image ``<pool>/<id>.img`` with its metadata
beside it (``<id>.meta.json``: the capacity asked for, the topology it was made in, its content source); a snapshot
is a sparse copy of the volume's image, ``<pool>/snapshots/<id>.img``. A clone copies the source volume's image, a
restore the snapshot's. Calls are idempotent by name, as the spec asks: the same name with the same source answers
the volume (or snapshot) made before, another source ALREADY_EXISTS.

Topology (config ``topology``: true, or a {key: value} map of this plugin's segments): the plugin reports
VOLUME_ACCESSIBILITY_CONSTRAINTS, NodeGetInfo answers its segments (true: ``topology.csi.kubevol.test/node`` = its
node id), and CreateVolume makes the volume in the first preferred segment, else the first requisite one, that it
serves (config ``topology_serves``: the segment maps it can create in; default: any), answering it as the volume's
accessible_topology; none it serves: RESOURCE_EXHAUSTED. Without accessibility requirements the volume is made in
the plugin's own segments.
"""
import json
import os
import time

from backend import PluginError, run

TOPOLOGY_KEY = "topology.csi.kubevol.test/node"


def segments(conf):
    """This plugin's topology segments ({} without topology)."""
    topology = conf.get("topology")
    if isinstance(topology, dict):
        return dict((str(k), str(v)) for k, v in topology.items())
    return {TOPOLOGY_KEY: conf["node_id"]} if topology else {}


def _copy(source, target, size):
    """A sparse copy of ``source`` at ``target``, grown to ``size`` bytes (a restore may ask for more)."""
    tmp = target + ".tmp"
    run("cp", "--sparse=always", source, tmp)
    if size > os.path.getsize(tmp):
        with open(tmp, "r+b") as handle:
            handle.truncate(size)
    os.replace(tmp, target)


class Controller(object):
    """CreateVolume, DeleteVolume, CreateSnapshot and DeleteSnapshot over ``self.pool`` (plugin.py's Plugin)."""

    # -- metadata ----------------------------------------------------------------------------------
    def _meta_path(self, volume_id):
        return self.pool.image(volume_id, must_exist=False)[:-len(".img")] + ".meta.json"

    def _meta(self, volume_id):
        try:
            with open(self._meta_path(volume_id)) as handle:
                return json.load(handle)
        except (IOError, ValueError):
            return {}

    def _snapshot_path(self, snapshot_id):
        self.pool.image(snapshot_id, must_exist=False)  # the same name rules as a volume's
        return os.path.join(self.pool.pool, "snapshots", snapshot_id + ".img")

    # -- topology ------------------------------------------------------------------------------------
    def _topology(self, request, conf):
        """The segments the new volume is made in ({}: no topology)."""
        own = segments(conf)
        if not own:
            return {}
        wanted = request.accessibility_requirements
        candidates = [dict(t.segments) for t in list(wanted.preferred) + list(wanted.requisite)]
        if not candidates:
            return own
        serves = conf.get("topology_serves")
        for candidate in candidates:
            if serves is None or candidate in serves:
                return candidate
        raise PluginError("RESOURCE_EXHAUSTED", "cannot create volume %s in the requested topology %s (this plugin "
                                                "serves %s)" % (request.name, candidates, serves))

    # -- content source --------------------------------------------------------------------------------
    def _source(self, request, conf):
        """(kind, id, the image to copy) of the request's content source, or (None, None, None)."""
        source = request.volume_content_source
        kind = source.WhichOneof("type")
        if kind is None:
            return None, None, None
        if kind == "volume":
            if "CLONE_VOLUME" not in conf["controller_caps"]:
                raise PluginError("INVALID_ARGUMENT", "CLONE_VOLUME is off: cannot clone %s" % source.volume.volume_id)
            return "volume", source.volume.volume_id, self.pool.image(source.volume.volume_id)
        if "CREATE_DELETE_SNAPSHOT" not in conf["controller_caps"]:
            raise PluginError("INVALID_ARGUMENT", "CREATE_DELETE_SNAPSHOT is off: cannot restore %s"
                              % source.snapshot.snapshot_id)
        path = self._snapshot_path(source.snapshot.snapshot_id)
        if not os.path.isfile(path):
            raise PluginError("NOT_FOUND", "snapshot %s does not exist" % source.snapshot.snapshot_id)
        return "snapshot", source.snapshot.snapshot_id, path

    # -- the calls ---------------------------------------------------------------------------------------
    def CreateVolume(self, request, conf):
        kind, source_id, source_image = self._source(request, conf)
        path = self.pool.image(request.name, must_exist=False)
        meta = self._meta(request.name)
        if os.path.exists(path):
            if meta.get("source") != ([kind, source_id] if kind else None):
                raise PluginError("ALREADY_EXISTS", "volume %s exists with another content source (%s)"
                                  % (request.name, meta.get("source")))
            size = self.pool.create(request.name, request.capacity_range.required_bytes,
                                    request.capacity_range.limit_bytes)
            topology = meta.get("topology") or {}
        else:
            topology = self._topology(request, conf)
            if source_image is not None:
                size = max(request.capacity_range.required_bytes, os.path.getsize(source_image))
                _copy(source_image, path, size)
            else:
                size = self.pool.create(request.name, request.capacity_range.required_bytes,
                                        request.capacity_range.limit_bytes)
            meta = {"capacity": size, "topology": topology, "source": [kind, source_id] if kind else None,
                    "parameters": dict(request.parameters)}
            with open(self._meta_path(request.name), "w") as handle:
                json.dump(meta, handle, sort_keys=True)
        resp = self.m.CreateVolumeResponse()
        resp.volume.volume_id = request.name
        resp.volume.capacity_bytes = size
        resp.volume.volume_context["image"] = path
        if topology:
            resp.volume.accessible_topology.add().segments.update(topology)
        if kind == "volume":
            resp.volume.content_source.volume.volume_id = source_id
        elif kind == "snapshot":
            resp.volume.content_source.snapshot.snapshot_id = source_id
        return resp

    def DeleteVolume(self, request, conf):
        self.pool.delete(request.volume_id)
        meta = self._meta_path(request.volume_id)
        if os.path.exists(meta):
            os.unlink(meta)
        return self.m.DeleteVolumeResponse()

    def CreateSnapshot(self, request, conf):
        if "CREATE_DELETE_SNAPSHOT" not in conf["controller_caps"]:
            raise PluginError("UNIMPLEMENTED", "CREATE_DELETE_SNAPSHOT is off")
        source = self.pool.image(request.source_volume_id)
        path = self._snapshot_path(request.name)
        record = path[:-len(".img")] + ".meta.json"
        if os.path.exists(path):
            with open(record) as handle:
                made = json.load(handle)
            if made["source"] != request.source_volume_id:
                raise PluginError("ALREADY_EXISTS", "snapshot %s exists of volume %s" % (request.name, made["source"]))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _copy(source, path, 0)
            with open(record, "w") as handle:
                json.dump({"source": request.source_volume_id, "created": time.time()}, handle)
            made = {"source": request.source_volume_id}
        resp = self.m.CreateSnapshotResponse()
        snap = resp.snapshot
        snap.snapshot_id = request.name
        snap.source_volume_id = request.source_volume_id
        snap.size_bytes = os.path.getsize(path)
        snap.ready_to_use = True
        created = os.stat(path).st_mtime
        snap.creation_time.seconds = int(created)
        snap.creation_time.nanos = int((created - int(created)) * 1e9)
        return resp

    def DeleteSnapshot(self, request, conf):
        if "CREATE_DELETE_SNAPSHOT" not in conf["controller_caps"]:
            raise PluginError("UNIMPLEMENTED", "CREATE_DELETE_SNAPSHOT is off")
        path = self._snapshot_path(request.snapshot_id)
        for name in (path, path[:-len(".img")] + ".meta.json"):
            if os.path.exists(name):
                os.unlink(name)
        return self.m.DeleteSnapshotResponse()
