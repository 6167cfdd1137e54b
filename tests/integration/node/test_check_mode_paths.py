"""Check mode catches what the real run would fail on (issue 37): a missing local PV path or one outside the allowed
directories, a hostPath whose type does not match (or that does not exist, or cannot be created), a missing CSI
socket on the node and on the controller host. Each fails in check mode naming the node, the volume and the remedy,
changes nothing, and the real run fails the same way; what is present passes."""
import os

from checks import failure, module_as_on_a_node, state

LOCAL = "kubernetes.io/local-volume"
HOST = "kubernetes.io/host-path"
CSI = "csi.example.io"
POD1 = "77777777-7777-4777-8777-777777777777"


def plugin_item(plugin, pv, path, kind=""):
    return dict(pv_name=pv, plugin=plugin, path=path, host_path_type=kind, pods=[{"uid": POD1, "name": "ns/p"}])


def mount(node, vols, options, check_mode):
    return node.module("node_volume_mount", check_mode=check_mode, volumes=vols, driver_options=options)


def same_failure_in_both(node, vols, options, volume):
    """The check run's failure of ``volume`` (nothing changed), after the real run's failed the same way."""
    before = state(node)
    res = mount(node, vols, options, True)
    entries = dict((f["volume"], f) for f in res["failures"])
    assert res["_rc"] != 0 and entries[volume]["node"] == "node1" and volume in entries[volume]["msg"], res
    assert state(node) == before
    real = mount(node, vols, options, False)
    assert dict((f["volume"], f["msg"]) for f in real["failures"])[volume] == entries[volume]["msg"], real
    return res, entries[volume]


def test_a_missing_local_path_and_one_outside_the_allowed_directories(node):
    disks = os.path.join(node.tmp, "disks")
    os.makedirs(os.path.join(disks, "present"))
    outside = os.path.join(node.tmp, "outside")
    os.makedirs(outside)
    options = {LOCAL: {"paths": [disks]}}
    missing = plugin_item(LOCAL, "pv-missing", os.path.join(disks, "absent"))
    res, entry = same_failure_in_both(node, [missing], options, "pv-missing")
    assert res["code"] == "KV-LOCAL-PATH" and "is missing" in entry["msg"], entry
    assert "create that directory (or attach the disk) on node node1" in entry["msg"]
    res, entry = same_failure_in_both(node, [plugin_item(LOCAL, "pv-out", outside)], options, "pv-out")
    assert disks in entry["msg"] and "outside the allowed directories" in entry["msg"], entry
    # present: the check passes and changes nothing, then the real run binds it
    present = plugin_item(LOCAL, "pv-ok", os.path.join(disks, "present"))
    before = state(node)
    chk = mount(node, [present], options, True)
    assert chk["_rc"] == 0 and chk["changed"] and state(node) == before, chk
    assert mount(node, [present], options, False)["_rc"] == 0 and len(node.mounts_under()) == 1


def test_host_path_types_that_do_not_match_or_cannot_be_created(node):
    root = os.path.join(node.tmp, "hp")
    os.makedirs(os.path.join(root, "adir"))
    afile = os.path.join(root, "afile")
    with open(afile, "w") as handle:
        handle.write("x")
    options = {HOST: {"paths": [root]}}
    cases = {
        "pv-mismatch": (plugin_item(HOST, "pv-mismatch", afile, "Directory"),
                        "hostPath type check failed: %s is not a directory, it's a File" % afile),
        "pv-absent": (plugin_item(HOST, "pv-absent", os.path.join(root, "none"), "File"),
                      "hostPath %s doesn't exist" % os.path.join(root, "none")),
        "pv-under-file": (plugin_item(HOST, "pv-under-file", os.path.join(afile, "sub"), "DirectoryOrCreate"),
                          "%s is not a directory" % afile),
    }
    for pv, (vol, why) in sorted(cases.items()):
        res, entry = same_failure_in_both(node, [vol], options, pv)
        assert res["code"] == "KV-HOSTPATH-TYPE" and why in entry["msg"], entry
        assert "on node node1" in entry["msg"] and "spec.hostPath.type" in entry["msg"]
    create = plugin_item(HOST, "pv-create", os.path.join(root, "new", "dir"), "DirectoryOrCreate")
    before = state(node)
    chk = mount(node, [create], options, True)
    assert chk["_rc"] == 0 and chk["changed"] and state(node) == before, chk
    assert mount(node, [create], options, False)["_rc"] == 0 and os.path.isdir(create["path"])


def csi_item(pv, **kw):
    item = dict(pv_name=pv, driver=CSI, volume_handle=pv + "-handle", capacity_bytes=1 << 20,
                access_modes=["ReadWriteOnce"], attach_required=True, pods=[{"uid": POD1, "name": "ns/p"}])
    item.update(kw)
    return item


def test_a_missing_node_plugin_socket_fails_the_check_of_attach_and_mount(node):
    """controller: node: the attach asks the node plugin's socket; a controller elsewhere: the mount does."""
    socket = os.path.join(node.kubelet_dir, "plugins", CSI, "csi.sock")
    on_node = {CSI: {"controller": "node"}}
    module_as_on_a_node(node, "node_volume_info")  # its site directory, before the picture
    before = state(node)
    setup = dict(attach={"volumes": [csi_item("pv-a")]}, mount={"volumes": [csi_item("pv-a")]})
    chk = module_as_on_a_node(node, "node_volume_setup", True, driver_options=on_node, **setup)
    _res, entry = failure(chk, "attach")
    assert entry["node"] == "node1" and "pv-a" in entry["msg"] and socket in entry["msg"], entry
    assert "node plugin" in entry["msg"] and 'driver_options["csi.example.io"]' in entry["msg"]
    assert state(node) == before
    real = module_as_on_a_node(node, "node_volume_setup", driver_options=on_node, **setup)
    assert failure(real, "attach")[1]["msg"] == entry["msg"]

    # the Controller service on another host: the node's attach keeps that host's answer, its mount needs the socket
    remote = {CSI: {"controller": "ctrl1", "controller_socket": "/run/ctrl1/csi.sock"}}
    unpublished = csi_item("pv-b")
    chk = module_as_on_a_node(node, "node_volume_setup", True, driver_options=remote,
                              attach={"volumes": [unpublished]}, mount={"volumes": [unpublished]})
    assert not chk["phase_results"]["attach"].get("failed"), chk
    _res, entry = failure(chk, "mount")
    assert "pv-b" in entry["msg"] and "node1" in entry["msg"] and socket in entry["msg"], entry
    published = csi_item("pv-b", controller_publish_context={"devicePath": "/dev/x"})
    real = module_as_on_a_node(node, "node_volume_setup", driver_options=remote, attach={"volumes": [published]},
                               mount={"volumes": [published]})
    assert not real["phase_results"]["attach"].get("failed"), real
    assert failure(real, "mount")[1]["msg"] == entry["msg"]


def test_a_missing_controller_socket_fails_the_controller_hosts_check(node):
    missing = os.path.join(node.tmp, "ctrl.sock")
    module_as_on_a_node(node, "node_volume_info")  # its site directory, before the picture
    args = dict(controller_host="ctrl1", operations=[{"op": "publish", "node": "node1", "node_id": "node1"}],
                volumes=[csi_item("pv-c")], driver_options={CSI: {"controller": "ctrl1", "controller_socket": missing}})
    before = state(node)
    chk = module_as_on_a_node(node, "csi_controller_calls", check_mode=True, **args)
    assert chk["_rc"] != 0 and chk["changed"] is False, chk
    [entry] = chk["failures"]
    assert entry["pv_name"] == "pv-c" and entry["node"] == "node1" and "controller host ctrl1" in entry["msg"]
    assert "no socket at %s" % missing in entry["msg"], entry
    assert state(node) == before
    real = module_as_on_a_node(node, "csi_controller_calls", **args)
    assert [f["msg"] for f in real["failures"]] == [entry["msg"]]
