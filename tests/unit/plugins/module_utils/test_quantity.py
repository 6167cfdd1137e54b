# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""quantity.py against Kubernetes' rules and the official client's parse_quantity."""

from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings, strategies as st
from kubernetes.utils import parse_quantity as k8s_parse

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import QuantityError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import (
    compare, format_bytes, format_quantity, parse_quantity, to_bytes)

SAME_AS_CLIENT = ["0", "1", "10Gi", "10G", "1.5Gi", "100m", "1k", "1M", "1Ki", "1Mi", "1Ti", "1Pi", "1Ei", "1E",
                  "5e3", "5E3", "1e-3", "-1Gi", "+2Mi", ".5", "1.", "0.5Mi", "123456789012345678", "1n", "1u",
                  "500Mi", "1e+3", "3.25T"]


@pytest.mark.parametrize("text", SAME_AS_CLIENT)
def test_matches_official_client(text):
    with localcontext() as ctx:
        ctx.prec = 100
        assert parse_quantity(text) == k8s_parse(text)


@pytest.mark.parametrize("text,expected", [
    ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("1000M", "1G"), ("1.5", "1500m"), ("0.5", "500m"), ("1025", "1025"),
    (".001Ki", "1024m"), ("1e3", "1e3"), ("0", "0"), ("0Gi", "0"), ("10Gi", "10Gi"), ("-1024Ki", "-1Mi"), ("-1024", "-1024"),
    ("1500e0", "1500"), ("1.5e3", "1500"), ("1e-3", "1e-3"), ("100m", "100m"), ("2048Ki", "2Mi"),
])
def test_canonical_format(text, expected):
    assert format_quantity(text) == expected


def test_rounds_up_to_nano_and_sizes_ceil():
    assert parse_quantity(".000000000001Ki") == Decimal("2e-9")
    assert to_bytes("1.5") == 2 and to_bytes("100m") == 1 and to_bytes("1Gi") == 2 ** 30


def test_binary_si_capped_at_int64():
    assert to_bytes("16Ei") == (1 << 63) - 1


def test_compare_by_value():
    assert compare("10Gi", "10G") == 1 and compare("1024Mi", "1Gi") == 0 and compare("1k", "1Ki") == -1
    assert to_bytes("10Gi") != to_bytes("10G")


@pytest.mark.parametrize("bad", ["", "K", "1K", "1ki", "1 Gi", " 1", "1Gb", "Gi", "1.2.3", "inf", "nan", "1_000",
                                 "1e", "--1", "1Mi1", None, 1.5, True, [], "e3"])
def test_malformed_raises_quantity_error_naming_field(bad):
    with pytest.raises(QuantityError) as err:
        to_bytes(bad, "PVC ns/a spec.resources.requests.storage")
    assert "spec.resources.requests.storage" in str(err.value)


def test_format_bytes():
    assert format_bytes(2 ** 30) == "1Gi" and format_bytes(1536 * 2 ** 20) == "1536Mi" and format_bytes(1000) == "1k"
    # as users write them: 10G is not 9765625Ki
    assert format_bytes(10 * 10 ** 9) == "10G" and format_bytes(500 * 10 ** 6) == "500M"
    assert format_bytes(0) == "0" and format_bytes(1023) == "1023" and format_bytes(3 * 2 ** 40) == "3Ti"


_suffix = st.sampled_from(["", "Ki", "Mi", "Gi", "Ti", "Pi", "m", "k", "M", "G", "T", "P", "n", "u",
                           "e3", "E6", "e-2", "e0"])


@settings(max_examples=300, deadline=None)
@given(sign=st.sampled_from(["", "-", "+"]), whole=st.integers(0, 10 ** 12), frac=st.one_of(
    st.none(), st.integers(0, 10 ** 6).map(str)), suffix=_suffix)
def test_hypothesis_matches_client_after_nano_round_up(sign, whole, frac, suffix):
    text = "%s%d%s%s" % (sign, whole, "." + frac if frac is not None else "", suffix)
    with localcontext() as ctx:
        ctx.prec = 200
        theirs = k8s_parse(text)
        nano = theirs * 10 ** 9
        ceil = nano.to_integral_value(rounding="ROUND_CEILING") if nano > 0 else nano.to_integral_value(
            rounding="ROUND_FLOOR")
        expected = ceil / 10 ** 9
        if suffix.endswith("i") and expected > (1 << 63) - 1:
            expected = Decimal((1 << 63) - 1)
        assert parse_quantity(text) == expected
    assert compare(text, format_quantity(text)) == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8))
def test_never_a_traceback(text):
    try:
        to_bytes(text)
    except QuantityError:
        pass
