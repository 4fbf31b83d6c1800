"""Bug signatures and the registry at their edges: comparisons at equality, three-valued
logic, precedence, the types of names, and the registry's version logic and findings."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from pytest_stedge.bugs.registry import BugRegistry, load_bug, load_registry, release_of
from pytest_stedge.bugs.signature import UNKNOWN, SignatureError, parse_signature, signature_env
from pytest_stedge.errors import CaseError


def _eval(text: str, **env: object) -> object:
    return parse_signature(text).evaluate(env)


@pytest.mark.parametrize(
    ("op", "below", "equal", "above"),
    [
        ("<", True, False, False),
        ("<=", True, True, False),
        (">", False, False, True),
        (">=", False, True, True),
        ("==", False, True, False),
        ("!=", True, False, True),
    ],
)
def test_comparisons_at_equality(op: str, below: bool, equal: bool, above: bool) -> None:
    # epochs_sw against 3: 2 (below), 3 (equal), 4 (above)
    sig = parse_signature(f"epochs_sw {op} 3")
    assert [sig.evaluate({"epochs_sw": v}) for v in (2, 3, 4)] == [below, equal, above]


def test_arithmetic_precedence_and_unary_minus() -> None:
    # 2 + 3 * 4 = 14, not 20; (2 + 3) * 4 = 20; 10 - 4 - 3 = 3 (left to right); 12 / 3 / 2 = 2
    assert _eval("epochs_sw + 3 * 4 == 14", epochs_sw=2) is True
    assert _eval("(epochs_sw + 3) * 4 == 20", epochs_sw=2) is True
    assert _eval("epochs_sw - 4 - 3 == 3", epochs_sw=10) is True
    assert _eval("epochs_sw / 3 / 2 == 2", epochs_sw=12) is True
    assert _eval("-epochs_sw == -5", epochs_sw=5) is True
    assert _eval("--epochs_sw == 5", epochs_sw=5) is True
    assert _eval("epochs_sw - -1 == 6", epochs_sw=5) is True
    assert _eval("activations_bytes / activations_lower_bound_bytes >= 2",
                 activations_bytes=245_760, activations_lower_bound_bytes=122_880) is True


def test_logic_precedence_and_three_values() -> None:
    # and binds tighter than or: true or (false and x) is true
    assert _eval("epochs_sw > 0 or epochs_sw > 9 and epochs_hw > 9", epochs_sw=1, epochs_hw=0)
    assert _eval("(epochs_sw > 0 or epochs_sw > 9) and epochs_hw > 9",
                 epochs_sw=1, epochs_hw=0) is False
    assert _eval("not epochs_sw > 0", epochs_sw=0) is True
    assert _eval("not not epochs_sw > 0", epochs_sw=1) is True
    # unknown (val_cos not measured) is decided only by a decisive operand
    assert _eval("val_cos < 0.5 and epochs_sw > 0", epochs_sw=0) is False
    assert _eval("val_cos < 0.5 and epochs_sw > 0", epochs_sw=1) is UNKNOWN
    assert _eval("val_cos < 0.5 or epochs_sw > 0", epochs_sw=1) is True
    assert _eval("val_cos < 0.5 or epochs_sw > 0", epochs_sw=0) is UNKNOWN
    assert _eval("not val_cos < 0.5") is UNKNOWN
    assert _eval("-val_cos < 0") is UNKNOWN
    assert _eval("val_cos + 1 > 0") is UNKNOWN
    assert _eval("epochs_sw > 0 and epochs_hw > 0 and epochs_ec > 0",
                 epochs_sw=1, epochs_hw=1, epochs_ec=1) is True
    assert _eval("epochs_sw > 0 or epochs_hw > 0 or epochs_ec > 0",
                 epochs_sw=0, epochs_hw=0, epochs_ec=0) is False
    assert _eval("true") is True and _eval("false or true") is True and _eval("not true") is False


def test_values_the_env_cannot_give_are_unknown() -> None:
    assert _eval("val_snr > 40", val_snr=math.inf) is UNKNOWN  # not a figure to compare
    assert _eval("val_snr > 40", val_snr=math.nan) is UNKNOWN
    assert _eval("val_snr > 40", val_snr=True) is UNKNOWN  # a bool is not a number
    assert _eval("val_snr > 40", val_snr="45") is UNKNOWN
    assert _eval('"PRelu" in software_ops', software_ops="PRelu") is UNKNOWN
    assert _eval('"PRelu" in software_ops', software_ops=("PRelu",)) is True
    assert _eval('"PRelu" not in software_ops', software_ops=["Conv"]) is True
    assert _eval('"E103" in diagnostics', diagnostics=["E103", "CliArgumentError"]) is True
    assert _eval('target == "stm32n6"', target="stm32n6") is True
    assert _eval('stage != "oracle"', stage="generate") is True
    # a product overflowing to infinity says nothing
    assert _eval("macc * macc > 1", macc=1e200) is UNKNOWN
    assert _eval("macc / 0 > 1", macc=5) is UNKNOWN


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("software_ops > 3", 1, "a list cannot be compared with '>'"),
        ("3 > software_ops", 5, "a list cannot be compared with '>'"),
        ('target < "a"', 8, "strings compare only with '==' or '!='"),
        ('target == 3', 11, "cannot compare a string with a number"),
        ("(epochs_sw > 1) == (epochs_sw > 2)", 1, "a condition cannot be compared"),
        ("(epochs_sw > 1) == 3", 1, "a condition cannot be compared with '=='"),
        ("3 == (epochs_sw > 1)", 6, "a condition cannot be compared with '=='"),
        ("epochs_sw > 1 == 2", 15, "comparisons do not chain"),
        ('3 in software_ops', 1, "'in' needs a string on its left, got a number"),
        ('"x" in target', 8, "'in' needs a list on its right, got a string"),
        ('"x" not in epochs_sw', 12, "'not in' needs a list on its right, got a number"),
        ("epochs_sw + target > 1", 13, "'+' works on numbers, this is a string"),
        ("-target == 1", 2, "'-' works on numbers, this is a string"),
        ("epochs_sw > 1 and 3", 19, "'and' needs conditions on both sides, this is a number"),
        ("3 or epochs_sw > 1", 1, "'or' needs conditions on both sides, this is a number"),
        ("not 3", 1, "'not' needs conditions on both sides, this is a number"),
        ("epochs_sw", 1, "the signature is a number, not a condition"),
        ("(epochs_sw > 1", 15, "')' to close the '(' at column 1"),
        ("epochs_sw > 1 )", 15, "'and', 'or' or the end of the signature"),
        ("", 1, "empty signature"),
        ("epochs_sw > and", 13, "unexpected keyword 'and'"),
        ("nope > 1", 1, "unknown name 'nope'"),
        ("epochs_sw = 1", 11, "use '==' to compare"),
        ("epochs_sw > 1 && true", 15, "use 'and', 'or', 'not'"),
        ('"open', 1, "unterminated string"),
        ("epochs_sw > 1e999", 13, "out of range"),
        ("epochs_sw > 1.2.3", 13, "malformed number"),
        ("epochs_sw >", 12, "unexpected end of the signature"),
        ('epochs_sw > "x"', 13, "cannot compare a number with a string"),
        ("epochs_sw > 1 3", 15, "unexpected number 3"),
    ],
)
def test_errors_name_the_column(text: str, column: int, fragment: str) -> None:
    with pytest.raises(SignatureError) as info:
        parse_signature(text)
    assert info.value.column == column, str(info.value)
    assert fragment in str(info.value)


def test_length_and_depth_are_bounded() -> None:
    with pytest.raises(SignatureError, match="longer than 2000 characters"):
        parse_signature("epochs_sw > 1 or " * 200 + "true")
    assert _eval("(" * 50 + "true" + ")" * 50) is True
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("(" * 51 + "true" + ")" * 51)
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("-" * 51 + "epochs_sw > 1")
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("not " * 51 + "true")


def test_numbers_and_strings_tokenize_as_written() -> None:
    assert _eval("macc == 1_000", macc=1000) is True
    assert _eval("macc == .5", macc=0.5) is True
    assert _eval("macc == 2.5e3", macc=2500) is True
    assert _eval("macc == 25E-1", macc=2.5) is True
    assert _eval("macc==2", macc=2) is True  # no spaces needed
    assert _eval("target == 'stm32n6'", target="stm32n6") is True
    assert _eval('target == "("', target="(") is True  # a quoted parenthesis is a string
    assert _eval('target != ""', target="stm32n6") is True  # the empty string closes at once
    with pytest.raises(SignatureError, match="backslashes or newlines") as info:
        parse_signature('target == "a\\\\b"')
    assert info.value.column == 11


def test_names_and_evidence_of_nested_signatures() -> None:
    sig = parse_signature('not (-epochs_sw < 0 and "PRelu" in software_ops) or macc * 2 > val_cos')
    assert sig.names() == ["epochs_sw", "macc", "software_ops", "val_cos"]
    assert sig.evidence({"epochs_sw": 1, "software_ops": []}) == {
        "epochs_sw": 1, "macc": None, "software_ops": [], "val_cos": None}


def test_signature_env_collects_what_the_item_measured() -> None:
    result = {
        "software_ops": ["PRelu", 3], "target": "stm32n6", "tool": {"version": "4.0.1"},
        "diagnostics": [{"code": "E103", "kind": "LoadError"}, {"kind": "Timeout"}, "junk"],
        "epochs": {"sw": 2},
    }
    env = signature_env(result, stage="generate")
    assert env["software_ops"] == ["PRelu", "3"] and env["target"] == "stm32n6"
    assert env["diagnostics"] == ["E103", "LoadError", "Timeout"]
    assert env["version"] == "4.0.1" and env["stage"] == "generate" and env["epochs_sw"] == 2
    assert signature_env(result, version="9.9.9")["version"] == "9.9.9"
    assert signature_env(result, metrics={"macc": 1.0})["macc"] == 1.0
    assert "epochs_sw" not in signature_env(result, metrics={"macc": 1.0})
    assert signature_env(None) == {} and signature_env({"tool": {}}) == {}
    assert signature_env({"tool": {}}, version="4.0.1") == {"version": "4.0.1"}
    # the case's target where the run states none (a 4.0.0 Developer Cloud validate log)
    assert signature_env({"tool": {}}, target="stm32n6") == {"target": "stm32n6"}
    assert signature_env({"target": "stm32h7"}, target="stm32n6")["target"] == "stm32n6"
    assert signature_env({"target": "stm32h7"})["target"] == "stm32h7"


# -- the registry -----------------------------------------------------------------------------

BUG = """\
id = "{id}"
title = "t"
source = "s"
affected = "{affected}"
status = "{status}"
reproducers = ["cnn"]
signature = "epochs_sw > 0"
{extra}
"""


def _bug(tmp_path: Path, affected: str = "<2.2", status: str = "open", extra: str = "",
         name: str = "b") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(BUG).format(id=name, affected=affected, status=status,
                                                extra=extra))
    return path


@pytest.mark.parametrize(
    ("affected", "fixed_in", "version", "expected"),
    [
        ("<2.2", "2.2.0", "2.1.9", True),
        ("<2.2", "2.2.0", "2.2.0", False),  # fixed_in is the first fixed version
        ("<2.2", "2.2.0", "2.3.0", False),
        ("==4.0.1", None, "4.0.0", None),
        ("==4.0.1", None, "4.0.1", True),
        ("==4.0.1", None, "4.0.2", None),
        (">=2.0,<2.2", "3.0.0", "2.2.1", None),  # between: nobody reported
        ("==4.0.*", "4.1.0", "4.0.7", True),
        ("unknown", "4.1.0", "4.1.0", False),
        ("unknown", "4.1.0", "4.0.0", None),
    ],
)
def test_affects_at_its_edges(tmp_path: Path, affected: str, fixed_in: str | None,
                              version: str, expected: bool | None) -> None:
    extra = f'fixed_in = "{fixed_in}"' if fixed_in else ""
    bug = load_bug(_bug(tmp_path, affected, extra=extra))
    assert bug.affects(version) is expected


def test_release_of_and_link_text(tmp_path: Path) -> None:
    assert str(release_of("v4.0.1-20581 7ed50de05")) == "4.0.1"
    assert release_of("nightly") is None
    bug = load_bug(_bug(tmp_path))
    assert bug.link_text() == "b (s)"
    assert bug.explains({"epochs_sw": 1}, "2.1.0") is True
    assert bug.explains({"epochs_sw": 0}, "2.1.0") is False
    assert bug.explains({"epochs_sw": 1}, "2.2.0") is False
    assert bug.matches({}) is None


@pytest.mark.parametrize(
    ("affected", "status", "extra", "key", "fragment"),
    [
        ("<2.2", "fixed", "", "fixed_in", "status 'fixed' needs the first fixed version"),
        ("<2.2", "open", 'fixed_in = "2.1.0"', "fixed_in", "inside affected"),
        ("<2.2", "open", 'fixed_in = "two"', "fixed_in", "is not a version"),
        ("<2.3", "open", 'fixed_in = "2.2.0rc1"', "fixed_in", "inside affected"),  # a pre-release
        ("bogus", "open", "", "affected", "not a PEP 440 specifier"),
        ("", "open", "", "affected", "empty; write 'unknown' when nobody knows"),
        ("<2.2", "closed", "", "status", "accepted: open, fixed, unknown"),
        ("<2.2", "open", 'stages = ["build"]', "stages", "expected a list drawn from"),
        ("<2.2", "open", "notes = 3", "notes", "expected a string"),
        ("<2.2", "open", "colour = 1", "colour", "unknown key"),
    ],
)
def test_bad_entries_name_file_and_key(tmp_path: Path, affected: str, status: str, extra: str,
                                       key: str, fragment: str) -> None:
    path = _bug(tmp_path, affected, status, extra)
    with pytest.raises(CaseError) as info:
        load_bug(path)
    assert key in str(info.value) and fragment in str(info.value) and str(path) in str(info.value)


def test_ids_reproducers_and_required_keys(tmp_path: Path) -> None:
    path = _bug(tmp_path, name="Bad_Id")
    with pytest.raises(CaseError, match="expected lower-case letters"):
        load_bug(path)
    other = tmp_path / "other.toml"
    other.write_text(_bug(tmp_path, name="b").read_text())
    with pytest.raises(CaseError, match="differs from the file name 'other'"):
        load_bug(other)
    empty = _bug(tmp_path, name="e")
    empty.write_text(empty.read_text().replace('reproducers = ["cnn"]', "reproducers = []"))
    with pytest.raises(CaseError, match="non-empty list of corpus case names"):
        load_bug(empty)
    blank_name = _bug(tmp_path, name="n")
    blank_name.write_text(blank_name.read_text().replace('["cnn"]', '["cnn", ""]'))
    with pytest.raises(CaseError, match="non-empty list of corpus case names"):
        load_bug(blank_name)
    blank = _bug(tmp_path, name="t")
    blank.write_text(blank.read_text().replace('title = "t"', 'title = "  "'))
    with pytest.raises(CaseError, match="must not be empty"):
        load_bug(blank)
    missing = _bug(tmp_path, name="m")
    missing.write_text(missing.read_text().replace('source = "s"\n', ""))
    with pytest.raises(CaseError, match="missing; a bug file needs"):
        load_bug(missing)
    bad_sig = _bug(tmp_path, name="g")
    bad_sig.write_text(bad_sig.read_text().replace("epochs_sw > 0", "epochs_sw >"))
    with pytest.raises(CaseError, match="signature"):
        load_bug(bad_sig)
    binary = tmp_path / "x.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(CaseError, match="not UTF-8 text"):
        load_bug(binary)


def test_findings_for_relevant_bugs_always_and_others_only_when_they_match(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        _bug(tmp_path, "==4.0.1", name=name)
    (tmp_path / "c.toml").write_text((tmp_path / "c.toml").read_text().replace(
        'reproducers = ["cnn"]', 'reproducers = ["other"]').replace(
        'signature = "epochs_sw > 0"', 'signature = "val_cos < 0.5"\nstages = ["validate-host"]'))
    registry = load_registry(tmp_path)
    assert len(registry) == 3 and "a" in registry and "z" not in registry
    assert [b.id for b in registry] == ["a", "b", "c"]
    assert [b.id for b in registry.relevant("cnn")] == ["a", "b"]
    assert [b.id for b in registry.relevant(None, ["c"])] == ["c"]
    quiet = registry.evaluate({"epochs_sw": 0, "stage": "generate"}, case_name="nobody")
    assert quiet == []  # nothing matched, nothing relevant
    rows = registry.evaluate({"epochs_sw": 0, "stage": "generate"}, case_name="cnn",
                             version="4.0.1")
    assert [(f.bug_id, f.status) for f in rows] == [("a", "not-reproduced"), ("b", "not-reproduced")]
    assert rows[0].evidence == {"signature": "epochs_sw > 0", "values": {"epochs_sw": 0},
                                "reproducer": True, "version": "4.0.1", "affects": True}
    # c is looked for on validate-host only: unknown there (val_cos not measured), absent elsewhere
    host = registry.evaluate({"stage": "validate-host"}, case_bugs=["c"])
    assert [(f.bug_id, f.status) for f in host] == [("c", "unknown")]
    assert "version" not in host[0].evidence
    matched = registry.evaluate({"epochs_sw": 3, "version": "4.0.0"}, case_name="nobody")
    assert [(f.bug_id, f.status, f.evidence["reproducer"], f.evidence["affects"])
            for f in matched] == [("a", "reproduced", False, None), ("b", "reproduced", False, None)]
    assert matched[0].to_row() == {"bug_id": "a", "status": "reproduced",
                                   "evidence": matched[0].evidence}
    assert BugRegistry().ids() == [] and registry.get("z") is None


def test_unknown_reads_as_unknown_and_has_no_truth_value() -> None:
    assert repr(UNKNOWN) == "UNKNOWN"
    with pytest.raises(TypeError, match="compare with `is UNKNOWN`"):
        bool(UNKNOWN)


def test_the_length_limit_is_2000_characters_exactly() -> None:
    body = "epochs_sw > 1"
    at_limit = body + " " * (2000 - len(body))
    assert parse_signature(at_limit).evaluate({"epochs_sw": 2}) is True
    with pytest.raises(SignatureError) as info:
        parse_signature(at_limit + " ")
    assert info.value.column == 2001 and "longer than 2000 characters" in str(info.value)
    # the message shows a long signature clipped to 120 characters
    assert len(str(info.value).split("'")[1]) == 120


def test_messages_show_signatures_up_to_120_characters_whole() -> None:
    for length, shown in ((120, 120), (121, 120)):
        text = "nope > 1 and " + "x" * (length - 13)
        with pytest.raises(SignatureError) as info:
            parse_signature(text)
        quoted = str(info.value).split("'")[1]
        assert len(quoted) == shown
        assert quoted == (text if length <= 120 else text[:117] + "...")
    with pytest.raises(SignatureError) as info:
        parse_signature(3)  # type: ignore[arg-type]
    assert info.value.column == 1 and "a signature is a string, got int" in str(info.value)


@pytest.mark.parametrize("text", ["macc > 1e", "macc > 1e+", "macc > 2E-"])
def test_an_exponent_cut_short_at_the_end_is_a_signature_error(text: str) -> None:
    # "1e" is the number 1 followed by the name "e" (or by an operator): never a crash
    with pytest.raises(SignatureError):
        parse_signature(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('epochs_sw > 1 "x"', "unexpected string 'x'"),
        ("epochs_sw > 1 )", "unexpected ')'"),
        ("epochs_sw > 1 macc", "unexpected 'macc'"),
        ("epochs_sw > 1 2.5", "unexpected number 2.5"),
        ("(epochs_sw > 1", "unexpected end of the signature"),
    ],
)
def test_errors_describe_the_token_they_stopped_at(text: str, message: str) -> None:
    with pytest.raises(SignatureError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_signature(text)


def test_depth_is_counted_per_nesting_not_per_operator_seen() -> None:
    # a 'not' earlier in the signature does not lend depth to the parentheses after it
    ok = "not false or " + "(" * 50 + "true" + ")" * 50
    assert parse_signature(ok).evaluate({}) is True
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("not false or " + "(" * 51 + "true" + ")" * 51)
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("-1 < 0 or " + "(" * 51 + "true" + ")" * 51)
    with pytest.raises(SignatureError, match="nested more than 50 levels deep"):
        parse_signature("(true) or " + "(" * 51 + "true" + ")" * 51)
    assert parse_signature('"PRelu" not in (software_ops)').evaluate({"software_ops": ["Conv"]})
