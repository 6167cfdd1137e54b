# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every code a message ends with (``[KV-...]``, or an error class's ``code``) has its section in docs/errors.md, and
every section there is a code kubevol says: a reader who looks a code up finds why and what to do."""

import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CODE = re.compile(r"\bKV-[A-Z][A-Z-]*[A-Z]\b")


def codes_in(root, suffixes):
    found = set()
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(suffixes):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    found.update(CODE.findall(handle.read()))
    return found


def documented():
    with open(os.path.join(REPO, "docs", "errors.md"), encoding="utf-8") as handle:
        return re.findall(r"^## (KV-[A-Z-]+)$", handle.read(), re.M)


def test_every_code_said_has_its_section_and_every_section_is_said():
    said = codes_in(os.path.join(REPO, "plugins"), (".py",)) | codes_in(os.path.join(REPO, "scripts"), (".py",))
    sections = documented()
    assert sorted(said - set(sections)) == [], "codes with no section in docs/errors.md"
    assert sorted(set(sections) - said) == [], "sections of docs/errors.md for codes nothing says"


def test_the_sections_are_in_alphabetical_order_once_each():
    sections = documented()
    assert sections == sorted(set(sections))
