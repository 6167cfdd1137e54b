"""What the fake API server held after each write it answered (FakeApiServer.journal), for tests of write order.

Each entry: ``method``, ``path``, ``status`` and, after that write, ``attachments`` {VolumeAttachment name:
(persistentVolumeName, nodeName, status.attached)} and ``reported`` {node: [volumesAttached names]}, so a test can
say what a reader of the API (kubectl, a controller's informer) could have seen between two writes.
"""


def snapshot(objects, method, path, status):
    attachments, reported = {}, {}
    for (plural, _namespace, name), obj in objects.items():
        if plural == "volumeattachments":
            spec = obj.get("spec") or {}
            attachments[name] = ((spec.get("source") or {}).get("persistentVolumeName"), spec.get("nodeName"),
                                 bool((obj.get("status") or {}).get("attached")))
        elif plural == "nodes":
            reported[name] = [e.get("name") for e in (obj.get("status") or {}).get("volumesAttached") or ()]
    return {"method": method, "path": path, "status": status, "attachments": attachments, "reported": reported}


def nodes_per_volume(entry):
    """{persistentVolumeName: sorted nodes with a VolumeAttachment for it} at one journal entry."""
    nodes = {}
    for pv, node, _attached in entry["attachments"].values():
        nodes.setdefault(pv, set()).add(node)
    return dict((pv, sorted(names)) for pv, names in nodes.items())


def reporting_nodes(entry):
    """{unique volume name: sorted nodes whose status.volumesAttached lists it} at one journal entry."""
    nodes = {}
    for node, names in entry["reported"].items():
        for name in names:
            nodes.setdefault(name, set()).add(node)
    return dict((name, sorted(found)) for name, found in nodes.items())
