# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pictures in docs/pictures/ render from their Graphviz sources, show what they must, and the SVGs
docs/pictures.md shows are the rendering of today's sources (re-render: dot -Tsvg X.dot -o X.svg)."""
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PICTURES = os.path.join(REPO, "docs", "pictures")
SVG = "{http://www.w3.org/2000/svg}"

# picture -> (graph nodes, edges as (tail, head), words its labels must carry)
EXPECTED = {
    "volume-lifecycle": (
        {"detached", "attached", "staged", "published", "uncertain"},
        {("detached", "attached"), ("attached", "staged"), ("staged", "published"), ("published", "published"),
         ("published", "staged"), ("staged", "attached"), ("attached", "detached"), ("published", "detached")},
        ["attach/device", "mount/device", "mount/pod", "unmount/pod", "unmount/device", "detach/device",
         "expand/controller", "expand/node", "globalmount", "forced detach"]),
    "reconcile-phases": (
        {"lock", "facts1", "facts2", "facts3", "plan", "table", "check", "down1", "rec_down", "intents", "up2",
         "rec_up", "summary", "fail", "release"},
        {("lock", "facts3"), ("facts3", "plan"), ("plan", "table"), ("table", "down1"), ("down1", "rec_down"),
         ("rec_down", "intents"), ("intents", "up2"), ("up2", "rec_up"), ("rec_up", "summary"),
         ("check", "summary"), ("summary", "fail"), ("fail", "release")},
        ["--check", "teardown task", "setup task", "applied / failed / blocked", "before any node attaches"]),
}


def dot():
    path = shutil.which("dot")
    if path is None:
        msg = "Graphviz dot is missing (apt-get install graphviz; scripts/bootstrap.sh installs it)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def render(name):
    res = subprocess.run([dot(), "-Tsvg", os.path.join(PICTURES, name + ".dot")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr
    return res.stdout


def drawn(svg_text):
    """(node names, edges, all text) of a Graphviz SVG: each node and edge group has a <title>."""
    root = ET.fromstring(svg_text)
    nodes, edges = set(), set()
    for group in root.iter(SVG + "g"):
        title = group.find(SVG + "title")
        if title is None:
            continue
        if group.get("class") == "node":
            nodes.add(title.text)
        elif group.get("class") == "edge":
            tail, _arrow, head = title.text.partition("->")
            edges.add((tail, head))
    text = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    return nodes, edges, text


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_picture_renders_with_its_states_and_edges(name):
    nodes, edges, text = drawn(render(name))
    want_nodes, want_edges, words = EXPECTED[name]
    assert want_nodes <= nodes, want_nodes - nodes
    assert want_edges <= edges, want_edges - edges
    for word in words:
        assert word in text, word


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_committed_svg_is_todays_rendering(name):
    with open(os.path.join(PICTURES, name + ".svg")) as handle:
        committed = drawn(handle.read())
    assert committed == drawn(render(name)), "re-render: dot -Tsvg docs/pictures/%s.dot -o docs/pictures/%s.svg" % (
        name, name)


def test_the_docs_show_every_picture():
    with open(os.path.join(REPO, "docs", "pictures.md")) as handle:
        page = handle.read()
    for name in EXPECTED:
        assert "](pictures/%s.svg)" % name in page and "pictures/%s.dot" % name in page
    assert sorted(f[:-4] for f in os.listdir(PICTURES) if f.endswith(".dot")) == sorted(EXPECTED)
