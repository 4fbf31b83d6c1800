"""The bug-signature grammar: parsing, type checks, three-valued evaluation, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_stedge.bugs.signature import (
    UNKNOWN,
    Signature,
    SignatureError,
    parse_signature,
    signature_env,
)
from pytest_stedge.errors import StedgeError
from pytest_stedge.result import new_result

ENV = {
    "activations_ratio": 9.3,
    "activations_bytes": 22_900_000.0,
    "activations_lower_bound_bytes": 2_457_600.0,
    "epochs_hybrid": 0.0,
    "epochs_sw": 2.0,
    "val_cos": 0.091,
    "val_snr": -5.87,
    "software_ops": ["PRelu", "Softmax"],
    "diagnostics": ["W001"],
    "target": "stm32n6",
    "stage": "validate-target",
    "version": "4.0.1",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("activations_ratio > 4", True),
        ("activations_ratio <= 4", False),
        ('"PRelu" in software_ops', True),
        ('"PRelu" not in software_ops', False),
        ("epochs_hybrid > 0", False),
        ("val_cos < 0.5 and val_snr < 0", True),
        ("not (val_cos < 0.5)", False),
        ("epochs_sw > 5 or epochs_hybrid == 0", True),
        ("activations_bytes / activations_lower_bound_bytes > 9", True),
        ("activations_bytes - 2 * activations_lower_bound_bytes >= 0", True),
        ("-val_snr > 5", True),
        ("1e6 < activations_bytes", True),
        ("2_000_000 < activations_bytes", True),
        ('stage == "validate-target" and target != "stm32h7"', True),
        ("version == '4.0.1'", True),
        ("a_or_b" if False else "epochs_sw - 1 == 1", True),
        ("true and not false", True),
        ("1 + 2 * 3 == 7", True),
        ("(1 + 2) * 3 == 9", True),
        ("8 / 4 / 2 == 1", True),
    ],
)
def test_evaluates(text: str, expected: bool) -> None:
    assert parse_signature(text).evaluate(ENV) is expected


def test_missing_metric_is_unknown_three_valued() -> None:
    env = {"epochs_sw": 0.0}
    assert parse_signature("val_cos < 0.5").evaluate(env) is UNKNOWN
    assert parse_signature("not val_cos < 0.5").evaluate(env) is UNKNOWN
    # a decided operand decides; otherwise unknown propagates
    assert parse_signature("val_cos < 0.5 and epochs_sw > 0").evaluate(env) is False
    assert parse_signature("val_cos < 0.5 or epochs_sw == 0").evaluate(env) is True
    assert parse_signature("val_cos < 0.5 or epochs_sw > 0").evaluate(env) is UNKNOWN
    assert parse_signature('"PRelu" in software_ops').evaluate(env) is UNKNOWN
    assert parse_signature("val_cos + 1 > 0").evaluate(env) is UNKNOWN


def test_division_by_zero_is_unknown_not_an_error() -> None:
    env = {"activations_bytes": 10.0, "activations_lower_bound_bytes": 0.0}
    sig = parse_signature("activations_bytes / activations_lower_bound_bytes > 4")
    assert sig.evaluate(env) is UNKNOWN


def test_unknown_truth_cannot_be_used_as_a_bool() -> None:
    with pytest.raises(TypeError):
        bool(UNKNOWN)


def test_names_and_evidence() -> None:
    sig = parse_signature('"PRelu" in software_ops and epochs_sw > val_cos')
    assert sig.names() == ["epochs_sw", "software_ops", "val_cos"]
    assert sig.evidence({"epochs_sw": 2.0}) == {
        "epochs_sw": 2.0,
        "software_ops": None,
        "val_cos": None,
    }


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("", 1, "empty signature"),
        ("activations > 4", 1, "unknown name 'activations'"),
        ("epochs_sw >", 12, "expected a metric name"),
        ("(epochs_sw > 1", 15, "')' to close the '(' at column 1"),
        ("epochs_sw > 1)", 14, "'and', 'or' or the end"),
        ("epochs_sw = 1", 11, "use '=='"),
        ("epochs_sw > 1 && val_cos < 1", 15, "use 'and'"),
        ("epochs_sw", 1, "not a condition"),
        ("software_ops > 3", 1, "a list cannot be compared"),
        ("epochs_sw in software_ops", 1, "needs a string on its left"),
        ('"PRelu" in target', 12, "needs a list on its right"),
        ('target < "b"', 8, "strings compare only with"),
        ('epochs_sw == "1"', 14, "cannot compare a number with a string"),
        ("epochs_sw > 1 > 0", 15, "comparisons do not chain"),
        ("epochs_sw + (val_cos > 1) > 0", 13, "works on numbers"),
        ("epochs_sw > 0 and 3", 19, "needs conditions on both sides"),
        ("'PRelu in software_ops", 1, "unterminated string"),
        ("__import__ > 0", 1, "unknown name '__import__'"),
        ("__import__('os').system('x') == 0", 17, "unexpected character '.'"),
        ("epochs_sw > 1; x", 14, "unexpected character ';'"),
        ("epochs_sw > 1 in", 15, "comparisons do not chain"),
        ("(" * 80 + "epochs_sw > 1" + ")" * 80, 51, "nested more than 50"),
    ],
)
def test_errors_name_the_column_and_what_is_expected(text: str, column: int, fragment: str) -> None:
    with pytest.raises(SignatureError) as info:
        parse_signature(text)
    assert info.value.column == column
    assert fragment in str(info.value)
    assert f"column {column}" in str(info.value)
    assert isinstance(info.value, StedgeError)


def test_signature_env_from_a_result() -> None:
    result = new_result(
        "generate",
        target="stm32n6",
        tool={"version": "2.1.0"},
        memory={"activations_bytes": 1000, "weights_bytes": 10},
        epochs={"total": 5, "sw": 1, "hybrid": 0},
        software_ops=["PRelu"],
        diagnostics=[{"level": "warning", "code": "W1", "kind": "unsupported", "message": "m"}],
    )
    env = signature_env(result, stage="generate")
    assert env["software_ops"] == ["PRelu"]
    assert env["diagnostics"] == ["W1", "unsupported"]
    assert (env["target"], env["stage"], env["version"]) == ("stm32n6", "generate", "2.1.0")
    assert env["epochs_sw"] == 1 and "val_cos" not in env
    assert parse_signature('"PRelu" in software_ops and epochs_sw > 0').evaluate(env) is True
    # a Result that does not list software ops leaves the name unknown, not empty
    env = signature_env(new_result("generate"), stage="generate", version="2.1.0")
    assert "software_ops" not in env
    assert parse_signature('"PRelu" in software_ops').evaluate(env) is UNKNOWN


# -- fuzzing -------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyz_0123456789 .()<>=!+-*/\"'&|;,[]{}\\\n\te")
    + [
        "activations_ratio",
        "epochs_sw",
        "software_ops",
        "val_cos",
        "and",
        "or",
        "not",
        "in",
        '"PRelu"',
        " > ",
        " == ",
        "(",
        ")",
        "stage",
        "1e309",
        "__import__",
    ]
)


def _check_any(text: str) -> None:
    try:
        sig = parse_signature(text)
    except SignatureError as exc:
        assert 1 <= exc.column <= len(text) + 1
        assert f"column {exc.column}" in str(exc)
        return
    assert isinstance(sig, Signature)
    assert sig.evaluate(ENV) in (True, False, UNKNOWN)
    assert sig.evaluate({}) in (True, False, UNKNOWN)


@settings(max_examples=400, database=None, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_any_text_parses_or_names_a_position(text: str) -> None:
    _check_any(text)


@settings(max_examples=400, database=None, deadline=None)
@given(st.lists(_ALPHABET, max_size=25).map("".join))
def test_fuzz_token_soup_parses_or_names_a_position(text: str) -> None:
    _check_any(text)


def _conditions() -> st.SearchStrategy[str]:
    number = st.one_of(
        st.sampled_from(["activations_ratio", "epochs_sw", "val_cos", "epochs_hybrid", "macc"]),
        st.integers(-1000, 1000).map(str),
        st.floats(-1e6, 1e6, allow_nan=False).map(repr),
    )
    numbers = st.recursive(
        number,
        lambda inner: st.tuples(inner, st.sampled_from("+-*/"), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        max_leaves=6,
    )
    atom = st.one_of(
        st.tuples(numbers, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), numbers).map(
            " ".join
        ),
        st.sampled_from(
            [
                '"PRelu" in software_ops',
                '"W1" not in diagnostics',
                'stage == "generate"',
                "true",
                "false",
            ]
        ),
    )
    return st.recursive(
        atom,
        lambda inner: st.one_of(
            inner.map(lambda c: f"not ({c})"),
            st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
                lambda t: f"({t[0]}) {t[1]} ({t[2]})"
            ),
        ),
        max_leaves=8,
    )


@settings(max_examples=300, database=None, deadline=None)
@given(_conditions())
def test_fuzz_well_formed_conditions_parse_and_evaluate(text: str) -> None:
    sig = parse_signature(text)
    assert sig.evaluate(ENV) in (True, False, UNKNOWN)
    assert sig.evaluate({}) in (True, False, UNKNOWN)


def test_module_never_evaluates_python() -> None:
    import inspect

    import pytest_stedge.bugs.signature as module
    from pytest_stedge.bugs import grammar

    for mod in (module, grammar):
        source = inspect.getsource(mod)
        for forbidden in ("eval(", "exec(", "compile(", "import ast", "__import__("):
            assert forbidden not in source.replace("_eval(", ""), (mod.__name__, forbidden)
