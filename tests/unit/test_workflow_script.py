"""scripts/workflow.py's own logic: AWX's slicing of the hosts and the PLAY RECAP it reads (the workflow itself
runs in tests/e2e/test_storm_sliced.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))

import workflow  # noqa: E402


def test_slices_are_every_nth_host_as_awx_slices():
    hosts = ["node%d" % i for i in range(1, 8)]
    assert workflow.slices(hosts, 3) == [["node1", "node4", "node7"], ["node2", "node5"], ["node3", "node6"]]
    assert workflow.slices(hosts[:2], 3) == [["node1"], ["node2"]]  # no empty slice is run
    assert workflow.slices(hosts, 1) == [hosts]


def test_the_recap_is_read_for_changes_and_failures():
    text = ("PLAY RECAP *****\n"
            "localhost                  : ok=1    changed=0    unreachable=0    failed=0    skipped=1\n"
            "node1                      : ok=7    changed=2    unreachable=0    failed=1    skipped=0\n"
            "node4                      : ok=5    changed=1    unreachable=1    failed=0    skipped=0\n")
    recap = workflow.RECAP.findall(text)
    assert [r[0] for r in recap] == ["localhost", "node1", "node4"]
    assert sum(int(r[2]) for r in recap) == 3 and sum(int(r[3]) + int(r[4]) for r in recap) == 2


def test_options():
    args = workflow.parse(["-i", "inv", "--slices", "3", "--rounds", "2", "--until-converged"])
    assert (args.inventory, args.slices, args.rounds, args.until_converged, args.overlap) == ("inv", 3, 2, True, False)
