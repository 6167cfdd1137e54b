"""The plan action's copy of objects given inline (``cluster``) in plain JSON types: Ansible's tagged strings become
``str``, a date YAML left unquoted its ISO 8601 text, and a value no Kubernetes object holds is refused by name."""
import datetime

import pytest

from ansible_collections.kubevol.volumes.plugins.action.volume_reconcile_plan import native
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput


class Tagged(str):
    """A str subclass, as Ansible's templating hands a string on."""


def test_inline_objects_become_plain_json_types():
    stamp = datetime.datetime(2026, 11, 1, 10, 0, tzinfo=datetime.timezone.utc)
    got = native({"items": [{"metadata": {"namespace": Tagged("shop"), "creationTimestamp": stamp}}]})
    meta = got["items"][0]["metadata"]
    assert meta == {"namespace": "shop", "creationTimestamp": "2026-11-01T10:00:00+00:00"}
    assert meta["namespace"].__class__ is str


def test_a_value_no_object_holds_is_refused_by_name():
    with pytest.raises(InvalidInput, match="invalid cluster: .*not a value a Kubernetes object holds"):
        native({"items": [{"metadata": {"labels": {"odd": object()}}}]})
