"""Check mode catches what the real run would fail on (issue 37), on real loop devices: a missing image without
provision, a pool the node does not allow, a missing mkfs or grow tool, a filesystem of another type on an image not
attached yet. Each fails its volume in check mode naming the node, the volume and the remedy, changes nothing, and
the real run fails the same way; with everything present the check passes and so does the real run."""
import os

from checks import failure, hide, state
from conftest import MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names

POD1 = "55555555-5555-4555-8555-555555555555"
POD2 = "66666666-6666-4666-8666-666666666666"


def setup(node, vols, check_mode, provision=False, grow=False, **args):
    phases = {"attach": {"volumes": vols, "provision": provision}, "mount": {"volumes": vols}}
    if grow:
        phases.update(expand_controller={"volumes": vols}, expand_node={"volumes": vols})
    return node.module("node_volume_setup", check_mode=check_mode, **dict(phases, **args))


def test_a_missing_image_without_provision_fails_in_check_mode_as_in_the_real_run(node):
    vol = node.vol("pv-noimage", pods=[{"uid": POD1, "name": "default/a"}])
    before = state(node)
    chk = setup(node, [vol], True)
    res, entry = failure(chk, "attach")
    assert res["code"] == "KV-IMAGE-MISSING" and entry["node"] == "node1" and entry["volume"] == "pv-noimage"
    assert node.image(vol) in entry["msg"] and "provision=true" in entry["msg"], entry
    assert "mount" not in chk["phase_results"] or not chk["phase_results"]["mount"].get("volumes")
    assert state(node) == before
    # the operator's words, when the role shows it
    said = setup(node, [vol], True, words="role")
    assert "kubevol_provision=true" in failure(said, "attach")[1]["msg"]
    real_res, real = failure(setup(node, [vol], False), "attach")
    assert real["msg"] == entry["msg"] and real_res["code"] == res["code"]
    assert state(node) == before


def test_a_pool_the_node_does_not_allow_fails_in_check_mode_as_in_the_real_run(node):
    other = os.path.join(node.tmp, "elsewhere")
    os.makedirs(other)
    vol = dict(node.vol("pv-pool", pods=[{"uid": POD1}]), volume_attributes={"pool": other})
    before = state(node)
    _res, entry = failure(setup(node, [vol], True, provision=True), "attach")
    assert entry["node"] == "node1" and "pv-pool" in entry["msg"] and other in entry["msg"]
    assert 'driver_options["loop.kubevol.io"]' in entry["msg"], entry
    assert state(node) == before
    assert failure(setup(node, [vol], False, provision=True), "attach")[1]["msg"] == entry["msg"]
    assert state(node) == before


def test_a_missing_mkfs_fails_the_check_before_the_attach_and_the_real_run_alike(node):
    """The volume is not attached in check mode: its image (an existing blank one, and one provision would create) is
    what the check probes, and formatting it needs mkfs.xfs, which the node lacks."""
    hide(node, "mkfs.xfs")
    blank = node.vol("pv-blank", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD1}])
    node.run("truncate", "-s", str(320 * MiB), node.image(blank))
    new = node.vol("pv-new", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD2}])
    ext4 = node.vol("pv-ext4", fs_type="ext4", pods=[{"uid": POD2}])  # its tools are there: it passes
    before = state(node)
    chk = setup(node, [blank, new, ext4], True, provision=True)
    assert not chk["phase_results"]["attach"].get("failed"), chk
    mount = chk["phase_results"]["mount"]
    assert mount["failed"] and mount["code"] == "KV-TOOL-MISSING", mount
    assert [v["pv_name"] for v in mount["volumes"]] == ["pv-ext4"]
    assert mount["volumes"][0]["checked_on"] is None  # a new image: nothing there yet to probe
    found = dict((f["volume"], f) for f in mount["failures"])
    assert sorted(found) == ["pv-blank", "pv-new"]
    for pv, entry in found.items():
        assert entry["node"] == "node1" and entry["step"] == "check tools"
        assert entry["msg"] == ("volume %s on node node1: formatting it as xfs needs mkfs.xfs, which is not installed "
                                "there; install the xfsprogs package on node node1 and run again [KV-TOOL-MISSING]" % pv), entry
    assert state(node) == before

    real = setup(node, [blank, new, ext4], False, provision=True)
    assert not real["phase_results"]["attach"].get("failed"), real  # the real run attaches them first
    real_found = dict((f["volume"], f["msg"]) for f in real["phase_results"]["mount"]["failures"])
    assert real_found == dict((pv, entry["msg"]) for pv, entry in found.items())
    for vol in (blank, new):
        assert node.run("blkid", "-p", node.image(vol), check=False).returncode == 2  # never formatted


def test_a_filesystem_of_another_type_on_an_image_not_attached_fails_the_check(node):
    vol = node.vol("pv-other", size=64 * MiB, fs_type="xfs", pods=[{"uid": POD1}])
    node.run("truncate", "-s", str(64 * MiB), node.image(vol))
    node.run("mkfs.ext4", "-q", "-F", node.image(vol))
    before = state(node)
    chk = setup(node, [vol], True)
    res, entry = failure(chk, "mount")
    assert "already contains ext4" in entry["msg"] and "node1" in entry["msg"] and "fsType" in entry["msg"], entry
    assert res["volumes"] == [] and state(node) == before
    _res, real = failure(setup(node, [vol], False), "mount")
    assert "already contains ext4" in real["msg"] and real["volume"] == "pv-other"
    assert node.run("blkid", "-p", "-s", "TYPE", "-o", "value", node.image(vol)).stdout.strip() == "ext4"


def test_a_missing_grow_tool_leaves_the_grow_pending_in_the_check_as_in_the_real_run(node):
    """An xfs image not attached yet, grown in the same run: the check reads its filesystem on the image and finds
    that the growth needs xfs_growfs."""
    vol = node.vol("pv-grow", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD1}])
    node.run("truncate", "-s", str(320 * MiB), node.image(vol))
    node.run("mkfs.xfs", "-q", "-f", node.image(vol))
    bigger = dict(vol, capacity_bytes=400 * MiB)
    ok = setup(node, [bigger], True, grow=True)
    assert not any(r.get("failed") for r in ok["phase_results"].values()), ok
    grown = ok["phase_results"]["expand_node"]["volumes"][0]
    assert grown["fs_type"] == "xfs" and grown["fs_size_bytes"]["new"] == 400 * MiB and grown["changed"], grown
    assert ok["phase_results"]["mount"]["volumes"][0]["checked_on"] == node.image(vol)
    hide(node, "xfs_growfs")
    before = state(node)
    # a grow that cannot run yet is pending, not a failure (the claim waits, FileSystemResizePending), in the check
    # as in the real run; the volume's attach and mount go on
    checked = setup(node, [bigger], True, grow=True)
    assert not any(r.get("failed") for r in checked["phase_results"].values()), checked
    [waits] = checked["phase_results"]["expand_node"]["pending"]
    assert waits["reason"] == "ToolMissing" and waits["volume"] == "pv-grow", waits
    assert "growing its xfs filesystem needs xfs_growfs" in waits["msg"], waits
    assert "install the xfsprogs package on the node" in waits["msg"], waits
    assert state(node) == before and os.path.getsize(node.image(vol)) == 320 * MiB
    real = setup(node, [bigger], False, grow=True)
    assert real["phase_results"]["expand_node"]["pending"][0]["msg"] == waits["msg"]
    assert not any(r.get("failed") for r in real["phase_results"].values())  # attached and mounted; the grow waits


def test_everything_present_passes_the_check_and_the_real_run(node):
    new = node.vol("pv-new", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD1}])
    blank = node.vol("pv-blank", fs_type="ext4", pods=[{"uid": POD2, "read_only": True}])
    node.run("truncate", "-s", str(64 * MiB), node.image(blank))
    block = node.vol("pv-block", mode="Block", pods=[{"uid": POD1}])
    node.run("truncate", "-s", str(64 * MiB), node.image(block))
    vols = [new, blank, block]
    before = state(node)
    chk = setup(node, vols, True, provision=True)
    assert chk["_rc"] == 0 and chk["changed"], chk
    assert not any(r.get("failed") for r in chk["phase_results"].values()), chk
    mounted = dict((v["pv_name"], v) for v in chk["phase_results"]["mount"]["volumes"])
    assert mounted["pv-new"]["formatted"] and mounted["pv-blank"]["formatted"], mounted
    assert "mount device" in mounted["pv-new"]["actions"] and mounted["pv-blank"]["checked_on"] == node.image(blank)
    gpath = names.device_mount_path(node.kubelet_dir, "loop.kubevol.io", "pv-new.img")
    assert chk["phase_results"]["mount"]["diff"]["after"][gpath] == "(the device its attach makes)"
    assert state(node) == before

    real = setup(node, vols, False, provision=True)
    assert not any(r.get("failed") for r in real["phase_results"].values()), real
    assert gpath in node.mounts_under() and len(node.loops()) == 3
    again = setup(node, vols, True, provision=True)
    assert again["_rc"] == 0 and again["changed"] is False, again


def test_a_check_run_counts_the_hold_its_plans_teardown_releases_first_and_a_real_run_never_does(node, node2):
    """An RWO pod move: node1 holds the image; the plan detaches it there before node2 attaches it. In check mode
    nothing was detached, so node2's check counts node1's hold released (the item's detached_first_from); a real
    attach on node2 is still refused until node1's own detach."""
    vol = node.vol("pv-move", pods=[{"uid": POD1}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    device = node.loops()
    pools = {"loop.kubevol.io": {"pools": [node.pool]}}
    moved = dict(vol, pods=[{"uid": POD2}], detached_first_from=["node1"])
    before = state(node, node2)
    refused = node2.module("k8s_volume_attach", check_mode=True, volumes=[dict(moved, detached_first_from=[])],
                           driver_options=pools)
    assert refused["_rc"] != 0 and "held by node node1" in refused["msg"], refused
    chk = node2.module("node_volume_setup", check_mode=True, driver_options=pools, attach={"volumes": [moved]},
                       mount={"volumes": [moved]})
    assert not any(r.get("failed") for r in chk["phase_results"].values()), chk
    assert chk["phase_results"]["attach"]["volumes"][0]["attached"] is True
    assert state(node, node2) == before and node.loops() == device
    real = node2.module("k8s_volume_attach", volumes=[moved], driver_options=pools)
    assert real["_rc"] != 0 and "held by node node1" in real["msg"], real  # never in a real run
    assert node.loops() == device
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    assert node2.module("k8s_volume_attach", volumes=[moved], driver_options=pools)["_rc"] == 0
