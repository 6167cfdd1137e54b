"""kvtestnodes.loops: reading `losetup -J` output (no root needed)."""
import os

from kvtestnodes.loops import parse_losetup

# As util-linux 2.38 prints it: padded MAJ:MIN fields; an entry without a backing inode.
LOSETUP = """{
   "loopdevices": [
      {"name": "/dev/loop4", "maj:min": "  7:4  ", "back-ino": 2147779,
       "back-maj:min": "     254:0  ", "back-file": "/var/lib/kubevol/pool/a.img"},
      {"name": "/dev/loop5", "maj:min": "7:5", "back-ino": "12",
       "back-maj:min": "0:45", "back-file": "/run/b.img (deleted)"},
      {"name": "/dev/loop6", "maj:min": "7:6", "back-ino": null,
       "back-maj:min": null, "back-file": null}
   ]
}"""


def test_parse_losetup_identifies_backing_files_by_device_and_inode():
    loops = parse_losetup(LOSETUP)
    assert [lp["name"] for lp in loops] == ["/dev/loop4", "/dev/loop5"]
    assert loops[0]["majmin"] == "7:4"
    assert loops[0]["back"] == (os.makedev(254, 0), 2147779)
    assert loops[0]["back_dev"] == os.makedev(254, 0)
    assert loops[1]["back"] == (os.makedev(0, 45), 12)  # older losetup prints numbers as strings
    assert loops[1]["back_file"] == "/run/b.img (deleted)"


def test_parse_losetup_of_no_loop_devices():
    assert parse_losetup("") == []
    assert parse_losetup('{"loopdevices": []}') == []
