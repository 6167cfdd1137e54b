"""The in-process actions' copy of data given through a template (the plan's ``cluster``, the records'
``records``) in plain JSON types: Ansible's tagged strings become ``str``, a date YAML left unquoted its ISO 8601
text, and a value of no plain type is refused by name."""
import datetime

import pytest

from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import native
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput


class Tagged(str):
    """A str subclass, as Ansible's templating hands a string on."""


def test_inline_objects_become_plain_json_types():
    stamp = datetime.datetime(2026, 11, 1, 10, 0, tzinfo=datetime.timezone.utc)
    got = native({"items": [{"metadata": {"namespace": Tagged("shop"), "creationTimestamp": stamp}}]}, "cluster")
    meta = got["items"][0]["metadata"]
    assert meta == {"namespace": "shop", "creationTimestamp": "2026-11-01T10:00:00+00:00"}
    assert meta["namespace"].__class__ is str


def test_a_value_of_no_plain_type_is_refused_by_name():
    with pytest.raises(InvalidInput, match=r"invalid records\[1\]\.device_path: .*not a value of plain data"):
        native([{"type": "attached"}, {"type": "attached", "device_path": object()}], "records")


def test_the_refusal_names_the_place_of_the_value_inside_the_objects():
    with pytest.raises(InvalidInput, match=r"invalid cluster\.items\[0\]\.spec\.capacity\.storage: "):
        native({"items": [{"metadata": {"name": "pv-a"}, "spec": {"capacity": {"storage": {1, 2}}}}]}, "cluster")
