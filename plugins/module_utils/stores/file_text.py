# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a cluster state file's text: the YAML loader, whether a YAML snapshot is whole, kubectl's JSON streamed.

A snapshot decides what is torn down, so a file cut short must never read as a smaller cluster. JSON cut
anywhere does not parse. YAML cut at a line boundary inside ``items`` parses as a List with fewer items, so a
YAML snapshot is trusted only when its text shows that it ended where kubectl ended it: kubectl prints a List's
keys sorted (``apiVersion``, ``items``, ``kind``, ``metadata``: ``k8s.io/cli-runtime/pkg/printers/yaml.go``
YAMLPrinter marshals with ``sigs.k8s.io/yaml``, whose go-yaml encoder sorts mapping keys; ``printers/json.go``
gives the same order in JSON), so ``kind: List`` and ``metadata`` come after the last item, and a text that stops
inside the items has neither after ``items``. PyYAML keeps a mapping's keys in the order of the text, which is
what the check reads. A stream of several YAML documents, a lone object or a bare list of objects has no such
trailer: cut between two documents or two objects it still parses, so it is refused too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import traceback

YAML_IMPORT_ERROR = None
try:
    import yaml
except ImportError:
    yaml = None
    YAML_IMPORT_ERROR = traceback.format_exc()

if yaml is not None:
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Loader(_BaseLoader):  # pylint: disable=too-many-ancestors
        """SafeLoader that keeps timestamps as strings, as the Kubernetes API returns them."""

    Loader.yaml_implicit_resolvers = dict(
        (first, [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"])
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    )

KUBECTL_KINDS = "nodes,pods,pv,pvc,volumeattachments,csidrivers"
# How kubectl's own error output starts, when it was redirected into the state file.
KUBECTL_ERROR_PREFIXES = ("error:", "error from server", "the connection to the server", "unable to connect",
                          "unauthorized", "forbidden", "no resources found")
# The keys kubectl writes after a List's items, in its order: their presence after `items` shows the items ended.
LIST_TRAILER = ("kind", "metadata")


def describe_value(value):
    if isinstance(value, str):
        text = value.strip().splitlines()[0] if value.strip() else ""
        return "the text %r" % (text[:120],)
    name = type(value).__name__
    return ("an " if name[0] in "aeiou" else "a ") + name


def kubectl_error_reason(text):
    return ("it holds kubectl's error output, not a cluster (%s): fix kubectl's access (login, context, token) and "
            "write the file again" % describe_value(text))


def not_a_list_reason(number, doc):
    if isinstance(doc, dict):
        return "document %d is a mapping without a kind or items: not a Kubernetes List or object" % (number + 1)
    return "document %d is %s, not a Kubernetes List or object" % (number + 1, describe_value(doc))


def _last_line_starting(text, key):
    """Where the last line that starts with ``key:`` (a top-level key in block style) begins, or -1."""
    pos = text.rfind("\n" + key + ":")
    if pos >= 0:
        return pos + 1
    return 0 if text.startswith(key + ":") else -1


def yaml_text_cut_short_problem(text):
    """The same rule read from the lines, before any parse: why a block-style YAML text plainly lacks kubectl's
    trailer (an ``items:`` line with no ``kind:`` and ``metadata:`` line after it), or None when the parse must
    decide (yaml_cut_short_problem). kubectl's items are indented or start with ``- ``, so a line starting with
    ``kind:`` is the List's. A cut file is refused before its whole text is parsed, the slowest step of a big one."""
    if text.lstrip()[:1] in ("{", "["):
        return None  # flow style: only the parse can tell its keys
    items = _last_line_starting(text, "items")
    if items < 0:
        return None
    if all(_last_line_starting(text, key) > items for key in LIST_TRAILER):
        return None
    return ("its List has no `kind: List` and `metadata:` lines after its `items:` line, and kubectl writes them "
            "after the last item: this is what a file cut short inside the items looks like")


def yaml_cut_short_problem(documents):
    """Why the parsed YAML ``documents`` (yaml.load_all's, empty ones included) cannot be shown to be the whole
    snapshot, or None when they are one kubectl List with its trailer after ``items``. None too for what is no
    snapshot at all (nothing, one scalar): FileStore._to_list names that.

    kubevol's own rule (the kubelet reads no file); the order it checks is kubectl's (module docstring)."""
    if len(documents) > 1:
        return ("it holds %d YAML documents: a stream cut short between two documents still parses, so its end "
                "cannot be told from a cut" % len(documents))
    doc = documents[0] if documents else None
    if isinstance(doc, list):
        return "it holds a bare list of objects: a list cut short between two objects still parses"
    if not isinstance(doc, dict):
        return None
    if "items" not in doc and doc.get("kind"):
        return "it holds one object (kind %s), not a List: it cannot show that it is whole" % (doc.get("kind"),)
    keys = list(doc)
    after = keys[keys.index("items") + 1:] if "items" in doc else ()
    kind, metadata = doc.get("kind"), doc.get("metadata")
    if (all(key in after for key in LIST_TRAILER) and isinstance(kind, str) and kind.endswith("List")
            and isinstance(metadata, dict)):
        return None
    return ("its List has no `kind: List` and `metadata:` after its `items` (its top-level keys are, in order: %s), "
            "and kubectl writes them after the last item: this is what a file cut short inside the items looks like"
            % ", ".join(str(key) for key in keys))


def cut_short_reason(problem, path):
    # a file cut short (an interrupted kubectl, a full disk) must never read as a smaller cluster; JSON is preferred
    # for big clusters (a cut JSON file never parses); a YAML List must keep kubectl's key order (apiVersion, items,
    # kind, metadata, as yaml.safe_dump writes with its default sort_keys): docs/errors.md KV-CLUSTER-FILE
    return ("not trusted as a whole snapshot: %s; write it again with `kubectl get %s -A -o json > %s` (or `-o yaml`, "
            "as kubectl prints it) and check that kubectl succeeded" % (problem, KUBECTL_KINDS, path))


def kubectl_order(cluster_list):
    """The List with its top-level keys in kubectl's (sorted) order, so a YAML file kubevol writes keeps its
    trailer after ``items`` (yaml_cut_short_problem); the objects inside are left as they are."""
    return dict(sorted(cluster_list.items(), key=lambda pair: str(pair[0])))


class NotStreamable(Exception):
    """The text is not one JSON List that stream_items can read object by object; parse it whole."""


_skip_whitespace = json.decoder.WHITESPACE.match
_decode_one = json.JSONDecoder().raw_decode
# the decoder's C scanner itself, for the items: raw_decode is a Python call around it per object (docs/performance.md,
# "Why the code is shaped so"); it raises StopIteration where raw_decode raises "Expecting value"
_scan_one = json.scanner.make_scanner(json.JSONDecoder())


def _after_separator(text, pos, closing):
    """Where the next value starts after a ",", or the position of ``closing``; a trailing comma, which json.loads
    refuses, is not streamed either."""
    pos = _skip_whitespace(text, pos).end()
    if text[pos] == ",":
        pos = _skip_whitespace(text, pos + 1).end()
        if text[pos] in "]}":
            raise NotStreamable()
    elif text[pos] != closing:
        raise NotStreamable()
    return pos


def _items(text, pos, split, ends):
    """The objects of a List's ``items`` from ``pos``, an item's start; the position of the closing bracket is appended
    to ``ends``. ``split``: see stream_list_items."""
    stop = split.at if split is not None else -1
    while text[pos] != "]":
        if pos >= stop >= 0:
            # landing on split.at proves it an item's start, so what the other process read from it is what this loop
            # would read; passing it means the guess was inside an item, and that process's items are dropped
            end = split.take_over() if pos == stop else split.cancel()
            stop = -1
            if end is not None:
                if text[end] != "]":
                    raise NotStreamable()
                pos = end
                break
        obj, pos = _scan_one(text, pos)
        if obj.__class__ is not dict or not obj.get("kind"):
            raise NotStreamable()
        yield obj
        # a comma right after the item (json.dump's and kubectl's) tested by hand, one regex call for the whitespace
        # after it, not _after_separator's two per item
        if text[pos] == ",":
            pos += 1
            if text[pos] == " " and text[pos + 1] == "{":  # json.dump's ", "
                pos += 1
            elif text[pos] != "{":
                pos = _skip_whitespace(text, pos).end()
                if text[pos] in "]}":
                    raise NotStreamable()  # a trailing comma, which json.loads refuses
        else:
            pos = _after_separator(text, pos, "]")
    ends.append(pos)


def list_items_from(text, pos, ends):
    """The items of a List from ``pos`` (an item's start) to the end of its ``items``, whose closing bracket's position
    is appended to ``ends``: the second part, read by another process (cluster/load_split.py). The text's errors raise
    as in stream_list_items (ValueError, IndexError, StopIteration or NotStreamable)."""
    return _items(text, pos, None, ends)


def stream_list_items(text, split=None):
    """kubectl's JSON List, object by object (FileStore.stream_items).

    ``split``: the items from ``split.at`` on read by another process (cluster/load_split.py). When this loop reaches
    that position at an item's start, ``split.take_over()`` gives the position of the items' closing bracket, or None
    when that process failed (this loop then reads them itself); ``split.cancel()`` when the loop passes it."""
    try:
        pos = _skip_whitespace(text, 0).end()
        if text[pos:pos + 1] != "{":
            raise NotStreamable()
        pos = _skip_whitespace(text, pos + 1).end()
        seen_items = False
        kind = None
        while text[pos] != "}":
            key, pos = _decode_one(text, pos)
            pos = _skip_whitespace(text, pos).end()
            if key.__class__ is not str or text[pos] != ":":
                raise NotStreamable()
            pos = _skip_whitespace(text, pos + 1).end()
            if key == "items":
                if seen_items or text[pos] != "[":  # json.loads keeps the last of two; null items: parse() decides
                    raise NotStreamable()
                seen_items = True
                ends = []
                yield from _items(text, _skip_whitespace(text, pos + 1).end(), split, ends)
                pos = ends[0] + 1
            else:
                value, pos = _decode_one(text, pos)
                if key == "kind":
                    kind = value
            pos = _after_separator(text, pos, "}")
        if text[_skip_whitespace(text, pos + 1).end():]:
            raise NotStreamable()  # something after the object: json.loads refuses it, and says where
        if not seen_items or (kind is not None and (kind.__class__ is not str or not kind.endswith("List"))):
            raise NotStreamable()  # cluster.iter_items reads a List's items only; parse() and it decide the rest
    except (ValueError, IndexError, StopIteration):
        # JSONDecodeError is a ValueError; IndexError: the text ended early; StopIteration: the scanner found no value
        raise NotStreamable()
