"""kvtestnodes.state: the state directory's paths and nodes.json (no root needed)."""
import json
import os

import pytest

from kvtestnodes.base import TestNodesError as NodesError  # not collected as a test class
from kvtestnodes.state import SOCKET_PATH_MAX, Layout, load_state, save_state


def test_control_path_dir_stays_inside_a_short_state_dir():
    layout = Layout("/tmp/kubevol-n")  # only paths are computed: nothing is created
    assert layout.cp == os.path.join(layout.root, "cp")


def test_control_path_dir_moves_to_tmp_when_sockets_would_not_fit(tmp_path):
    deep = str(tmp_path / ("d" * 80))
    layout = Layout(deep)
    assert layout.cp.startswith("/tmp/kvtn-cp-")
    assert len(layout.cp) + 1 + 40 <= SOCKET_PATH_MAX  # ControlPath DIR/%C fits in sun_path
    assert Layout(deep).cp == layout.cp  # stable: `down` finds what `up` used
    assert Layout(deep + "x").cp != layout.cp


def test_nodes_json_round_trip_sorts_node10_after_node9(tmp_path):
    layout = Layout(str(tmp_path))
    names = ["node10", "node2", "node9", "node1"]
    save_state(layout, {"nodes": [{"name": n, "port": 1} for n in names]})
    state = load_state(layout)
    assert [n["name"] for n in state["nodes"]] == ["node1", "node2", "node9", "node10"]
    assert (state["state_dir"], state["cp_dir"]) == (layout.root, layout.cp)


def test_missing_nodes_json_is_no_nodes(tmp_path):
    assert load_state(Layout(str(tmp_path)))["nodes"] == []


def test_unreadable_nodes_json_names_the_file_and_the_way_out(tmp_path):
    layout = Layout(str(tmp_path))
    with open(layout.nodes_json, "w") as fh:
        fh.write(json.dumps({"nodes": []})[:-3])
    with pytest.raises(NodesError) as err:
        load_state(layout)
    assert layout.nodes_json in str(err.value)
    assert "down --state-dir %s" % layout.root in str(err.value)
