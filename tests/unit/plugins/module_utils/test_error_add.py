# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""common/errors.py KubevolError.add: a caller that knows more of where (a host, a volume) or what followed adds it
to the message, and the code stays last and once; ``text`` is the message without it, and str(err) is the message.
Each place that adds to a message: node/test_error_messages.py, test_provision_call_failures.py,
test_remote_controller.py, node/test_external_ephemeral.py."""

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import errors

WHERE = dict(node="node1", volume="pv-a")


def still_mounted():
    return errors.StillMounted(step="detach", paths="/var/lib/kubelet/pods/u/volumes/x/mount", **WHERE)


def test_a_prefix_and_a_suffix_go_around_the_body_and_the_code_stays_last_once():
    err = still_mounted()
    body = err.text
    assert err.msg == body + " [KV-STILL-MOUNTED]" and not body.endswith("]")
    assert err.add(prefix="controller host ctl: ", suffix="; then: the record failed") is err
    assert err.text == "controller host ctl: " + body + "; then: the record failed"
    assert err.msg == err.text + " [KV-STILL-MOUNTED]" and err.msg.count("[KV-") == 1
    assert str(err) == err.msg and err.args == (err.msg,)
    err.add(prefix="volume pv-a: ")  # again: still once, still last
    assert err.msg.startswith("volume pv-a: controller host ctl: refusing to detach volume pv-a")
    assert err.msg.endswith("; then: the record failed [KV-STILL-MOUNTED]") and err.msg.count("[KV-") == 1
    assert err.to_result()["code"] == "KV-STILL-MOUNTED"


def test_raised_after_adding_the_message_read_is_the_whole_one():
    with pytest.raises(errors.StillMounted) as raised:
        raise still_mounted().add(prefix="node node1: ")
    assert str(raised.value) == raised.value.msg and str(raised.value).startswith("node node1: refusing to detach")
    assert str(raised.value).endswith("[KV-STILL-MOUNTED]")


def test_an_error_without_a_code_gets_none():
    err = errors.KubevolError("lock of pv-a lost").add(prefix="node node1: ", suffix="; run again")
    assert err.msg == err.text == str(err) == "node node1: lock of pv-a lost; run again"
    assert "[KV-" not in err.msg and "code" not in err.to_result()


def test_a_message_given_with_its_code_keeps_it_last_once_after_an_addition():
    err = errors.SettingRefused("lock_timeout -1 is refused: it must be 0 or more [KV-SETTING]")
    assert err.text == "lock_timeout -1 is refused: it must be 0 or more"
    err.add(suffix="; set it again")
    assert err.msg == "lock_timeout -1 is refused: it must be 0 or more; set it again [KV-SETTING]"


def test_a_quoted_error_keeps_its_own_code_unless_the_quoting_one_ends_with_the_same():
    inner, outer = still_mounted(), still_mounted()
    other = errors.ForeignMount(what="pod mount", target="/m", source="/dev/loop3", expected="/dev/loop5", **WHERE)
    assert inner.quoted_in(outer) == inner.text  # the outer message ends with KV-STILL-MOUNTED already
    assert other.quoted_in(outer) == other.msg and other.msg.endswith("[KV-FOREIGN-MOUNT]")
    plain = errors.KubevolError("boom")
    assert plain.quoted_in(outer) == "boom" and outer.quoted_in(plain) == outer.msg
    outer.add(suffix="; then: %s" % other.quoted_in(outer))
    assert outer.msg.endswith("[KV-FOREIGN-MOUNT] [KV-STILL-MOUNTED]") and outer.msg.count("[KV-") == 2
