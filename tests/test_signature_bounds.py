"""Hostile signatures (issue 16): evaluation is bounded, and every malformed signature is a
SignatureError when the registry is read (at collection), never an exception of Python's."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bugs import GOOD, write_bug

from pytest_stedge.bugs.registry import load_registry
from pytest_stedge.bugs.signature import UNKNOWN, SignatureError, parse_signature
from pytest_stedge.errors import CaseError

CHAIN_998 = "+".join(["1"] * 998) + ">0"  # 1,996 characters: inside the 2,000 limit


def test_998_term_sum_is_refused_where_its_tree_grows_too_deep() -> None:
    # Today it parses, then raises RecursionError on every item that evaluates it.
    with pytest.raises(SignatureError) as info:
        parse_signature(CHAIN_998)
    # The k-th '+' (column 2k) makes a tree k + 1 deep: the 100th, at column 200, is refused.
    assert info.value.column == 200
    assert "nests more than 100 operations" in str(info.value)


def test_chains_under_the_bound_evaluate_to_their_hand_sums() -> None:
    ninety_nine = "+".join(["1"] * 99)
    assert parse_signature(f"{ninety_nine} > 98").evaluate({}) is True
    assert parse_signature(f"{ninety_nine} > 99").evaluate({}) is False
    halving = "epochs_sw" + "/2" * 10  # 1024 / 2**10 = 1
    assert parse_signature(f"{halving} == 1").evaluate({"epochs_sw": 1024}) is True


def test_deep_chains_inside_parentheses_are_bounded_too() -> None:
    # No chain is long (60 and 45 terms), but the first sits at the bottom of the second:
    # (1+...+1) is 60 deep, and its k-th '+1' after it makes 60 + k.
    text = "(" + "+".join(["1"] * 60) + ")" + "+1" * 45 + " > 0"
    with pytest.raises(SignatureError, match="nests more than 100 operations") as info:
        parse_signature(text)
    assert info.value.column == 120 + 2 * 41  # the 41st '+' after the parenthesis
    # 60 + 39 = 99 deep, and the comparison on top makes 100: accepted, and 99 > 98
    assert parse_signature("(" + "+".join(["1"] * 60) + ")" + "+1" * 39 + " > 98").evaluate(
        {}) is True


def test_registry_with_the_998_term_signature_fails_at_load_naming_file_and_key(
        tmp_path: Path) -> None:
    path = write_bug(tmp_path / "bugs", GOOD.replace(
        "signature = '\"PRelu\" in software_ops'", f"signature = '{CHAIN_998}'"))
    with pytest.raises(CaseError) as info:
        load_registry(tmp_path / "bugs")
    assert info.value.path == path and info.value.key == "signature"
    assert "column 200" in str(info.value)


def test_exponent_without_digits_is_a_malformed_number() -> None:
    for text, literal in (("epochs_sw > 1e", "1e"), ("epochs_sw > 2E+", "2E+")):
        with pytest.raises(SignatureError, match=re.escape(f"malformed number '{literal}'")) as info:
            parse_signature(text)
        assert info.value.column == 13


def test_leading_dot_numbers_are_numbers() -> None:
    sig = parse_signature("val_cos < .5")
    assert sig.evaluate({"val_cos": 0.4}) is True
    assert sig.evaluate({"val_cos": 0.6}) is False
    assert parse_signature("val_snr > -.25e1").evaluate({"val_snr": -2.0}) is True  # -2.5


def test_figures_beyond_float_range_are_unknown_not_an_overflow() -> None:
    sig = parse_signature("epochs_sw > 1")
    assert sig.evaluate({"epochs_sw": 10**400}) is UNKNOWN  # OverflowError today
    assert sig.evaluate({"epochs_sw": math.inf}) is UNKNOWN
    product = parse_signature("activations_bytes * activations_bytes > 1")
    assert product.evaluate({"activations_bytes": 1e200}) is UNKNOWN  # 1e400 is no figure


PIECES = ["epochs_sw", "val_cos", "software_ops", "stage", "'PRelu'", '"x"', "1", ".5", "1e",
          "1e+", "2e3", "1.2.3", "(", ")", "+", "-", "*", "/", "<", "<=", "==", "!=", "=",
          " and ", " or ", " not ", " in ", "true", "e", "\u202e", "\x00", "\\", "'"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
       | st.builds(lambda op, n: op.join(["1"] * n) + ">0",
                   st.sampled_from(["+", "-", "*", "/"]), st.integers(1, 999))
       | st.builds(lambda n: "(" * n + "val_cos<1" + ")" * n, st.integers(0, 60))
       | st.builds(lambda n: "not " * n + "val_cos<1", st.integers(0, 60)))
def test_any_text_is_a_signature_or_a_signature_error(text: str) -> None:
    try:
        sig = parse_signature(text)
    except SignatureError as exc:
        assert 1 <= exc.column <= len(text) + 1
        return
    for env in ({}, {"epochs_sw": 3, "val_cos": 0.2, "software_ops": ["PRelu"], "stage": "x"},
                {"epochs_sw": 10**400, "val_cos": math.nan}):
        assert sig.evaluate(env) in (True, False) or sig.evaluate(env) is UNKNOWN
