"""kvtestnodes.mounts: mountinfo parsing and the unmount order (no root needed)."""
from kvtestnodes.mounts import deepest_first, parse_mountinfo

MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    # no optional fields; a target and a source with an escaped space and backslash
    "40 22 0:45 / /tmp/a\\040b rw - tmpfs my\\134src rw,size=64k\n"
    # several optional fields before the separator
    "41 22 7:3 /sub /var/lib/kubelet/pods/x rw shared:5 master:2 propagate_from:1 - xfs /dev/loop3 rw\n"
    "garbage line without a separator\n"
)


def test_parse_mountinfo_reads_fields_after_optional_ones_and_unescapes():
    mounts = parse_mountinfo(MOUNTINFO)
    assert [m["target"] for m in mounts] == ["/", "/tmp/a b", "/var/lib/kubelet/pods/x"]
    assert mounts[1] == {"majmin": "0:45", "root": "/", "target": "/tmp/a b", "fstype": "tmpfs",
                         "source": "my\\src"}
    assert (mounts[2]["fstype"], mounts[2]["source"], mounts[2]["root"], mounts[2]["majmin"]) == (
        "xfs", "/dev/loop3", "/sub", "7:3")


def test_deepest_first_unmounts_children_and_the_upper_of_stacked_mounts_first():
    ms = [{"target": t, "i": i} for i, t in enumerate(["/a", "/a/b", "/a/b/c", "/x", "/a/b"])]
    order = [(m["target"], m["i"]) for m in deepest_first(ms)]
    assert order == [("/a/b/c", 2), ("/a/b", 4), ("/a/b", 1), ("/x", 3), ("/a", 0)]
