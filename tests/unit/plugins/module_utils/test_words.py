# -*- coding: utf-8 -*-
"""common/words.py: a remedy names a setting once and is said in its reader's words."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError


def test_a_setting_is_said_as_the_module_option_or_the_role_variable():
    text = "image x is missing on node n1: set %s to have kubevol create it" % words.setting("provision", True)
    assert words.say(text) == "image x is missing on node n1: set provision=true to have kubevol create it"
    assert words.say(text, words.ROLE) == "image x is missing on node n1: set kubevol_provision=true to have kubevol create it"


def test_lists_keys_and_bare_names():
    text = "%s, %s, %s" % (words.setting("force_release_holders", ["node2"]),
                           words.setting("driver_options", key="loop.kubevol.io"), words.setting("known_drivers"))
    assert words.say(text) == 'force_release_holders=["node2"], driver_options["loop.kubevol.io"], known_drivers'
    assert words.say(text, words.ROLE) == ('kubevol_force_release_holders=["node2"], '
                                           'kubevol_driver_options["loop.kubevol.io"], kubevol_known_drivers')


def test_an_unknown_setting_or_a_mapping_value_is_a_programming_error():
    with pytest.raises(ValueError):
        words.setting("no_such_setting")
    with pytest.raises(ValueError):
        words.setting("driver_options", {"a": 1})


def test_say_all_walks_a_result_and_keeps_data_keys_as_they_are():
    token = words.setting("provision", True)
    result = {"msg": token, "failures": [{"msg": token}], "plan": [{"reason": token}], "count": 3}
    said = words.say_all(result, words.ROLE, skip=("plan",))
    assert said == {"msg": "kubevol_provision=true", "failures": [{"msg": "kubevol_provision=true"}],
                    "plan": [{"reason": token}], "count": 3}


def test_text_without_a_token_and_other_templates_are_left_alone():
    text = "secret ${pvc.name}-key and {not_a_token} and @{} stay"
    assert words.say(text, words.ROLE) == text


def test_an_error_carries_its_code_in_its_result():
    class Missing(KubevolError):
        message = "thing {name} is missing"
        code = "KV-TEST-MISSING"

    err = Missing(name="x")
    # the message ends with the code that links its why in docs/errors.md, once
    assert err.msg == "thing x is missing [KV-TEST-MISSING]"
    assert err.to_result() == {"name": "x", "code": "KV-TEST-MISSING"}
    assert Missing("thing y is missing [KV-TEST-MISSING]").msg == "thing y is missing [KV-TEST-MISSING]"
