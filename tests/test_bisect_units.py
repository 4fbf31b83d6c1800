"""Delta debugging and option units, without running any tool."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from pytest_stedge.bisect.ddmin import FAIL, PASS, UNRESOLVED, _split, ddmin
from pytest_stedge.bisect.options import Unit, case_options, split_units, variant
from pytest_stedge.case.model import Case, NeuralArt


def counted(culprits: set[int]) -> tuple[list[list[int]], object]:
    runs: list[list[int]] = []

    def test(kept: list[int]) -> str:
        runs.append(kept)
        return FAIL if culprits <= set(kept) else PASS

    return runs, test


@pytest.mark.parametrize("n", [2, 3, 5, 8, 10, 13, 16])
def test_every_pair_and_every_single_option_is_found_within_2_n_log_n_runs(n: int) -> None:
    for size in (1, 2):
        for culprits in itertools.combinations(range(n), size):
            runs, test = counted(set(culprits))
            assert ddmin(list(range(n)), test) == list(culprits)
            # + the two runs before the search (every option, none)
            assert len(runs) + 2 <= 2 * n * math.log2(n), (n, culprits, len(runs))
            assert len({tuple(r) for r in runs}) == len(runs)  # no set is run twice


def test_three_options_needed_together_are_found() -> None:
    _runs, test = counted({1, 4, 6})
    assert ddmin(list(range(8)), test) == [1, 4, 6]


def test_the_result_is_one_minimal_even_when_several_sets_fail() -> None:
    # fails with {0, 1} or with {5}: any 1-minimal answer is one of them
    def test(kept: list[int]) -> str:
        return FAIL if {0, 1} <= set(kept) or 5 in kept else PASS

    found = ddmin(list(range(8)), test)
    assert test(found) == FAIL
    assert all(test([u for u in found if u != x]) == PASS for x in found)


def test_an_undecided_run_is_not_a_failure() -> None:
    # without option 2 the tool errs: those runs are undecided, never "the failure"
    def test(kept: list[int]) -> str:
        if 2 not in kept:
            return UNRESOLVED
        return FAIL if 5 in kept else PASS

    assert ddmin(list(range(8)), test) == [2, 5]


def test_one_unit_and_no_unit() -> None:
    assert ddmin(["--Os"], lambda kept: FAIL) == ["--Os"]
    assert ddmin([], lambda kept: FAIL) == []


def test_split_keeps_order_and_sizes() -> None:
    assert _split(list(range(10)), 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert _split([1, 2], 4) == [[1], [2]]


def test_options_split_into_units_with_their_values() -> None:
    words = ["--optimization", "3", "--Os", "--Omax-ca-pipe", "4", "--range", "-1", "1", "--cache-maintenance"]
    units = split_units(words, "profile")
    assert [u.text for u in units] == ["--optimization 3", "--Os", "--Omax-ca-pipe 4",
                                       "--range -1 1", "--cache-maintenance"]
    assert split_units(["-O", "3", "-b", "10"], "case")[1] == Unit(("-b", "10"), "case")
    assert split_units([], "case") == []


def _case(tmp_path: Path, options: tuple[str, ...] = ("--eec", "-b", "4")) -> Case:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles/stm32n6.mpool").write_text("{}")
    (tmp_path / "profiles/n6.mdesc").write_text("{}")
    (tmp_path / "profiles/neural_art.json").write_text(
        "// a comment, as ST's files have\n" + json.dumps({"Globals": {}, "Profiles": {
            "p": {"memory_pool": "./stm32n6.mpool", "memory_desc": "./n6.mdesc",
                  "options": "--Os --Ocache-opt --optimization 3"}}}))
    (tmp_path / "m.onnx").write_bytes(b"")
    return Case("c", tmp_path / "case.toml", tmp_path, tmp_path / "m.onnx", "stm32n6",
                options=options,
                neural_art=NeuralArt("p", tmp_path / "profiles/neural_art.json", None))


def test_a_case_s_units_are_its_profile_s_then_its_own(tmp_path: Path) -> None:
    options = case_options(_case(tmp_path))
    assert [(u.text, u.source) for u in options.units] == [
        ("--Os", "profile"), ("--Ocache-opt", "profile"), ("--optimization 3", "profile"),
        ("--eec", "case"), ("-b 4", "case")]
    assert options.describe().startswith("5 options: 3 of the profile")


def test_a_variant_keeps_only_its_units_in_a_profile_of_its_own(tmp_path: Path) -> None:
    case = _case(tmp_path)
    options = case_options(case)
    kept = [options.units[1], options.units[4]]
    chosen = variant(case, options, kept, tmp_path / "run")
    assert chosen.options == ("-b", "4")
    assert chosen.neural_art is not None and chosen.neural_art.file is not None
    derived = json.loads(chosen.neural_art.file.read_text())["Profiles"]["p"]
    assert derived["options"] == "--Ocache-opt"
    # the mpool and memory description still the case's own files, from the new folder
    assert Path(derived["memory_desc"]) == (tmp_path / "profiles/n6.mdesc").resolve()
    assert chosen.neural_art.mpool == (tmp_path / "profiles/stm32n6.mpool").resolve()
    assert chosen.neural_art.file.parent == tmp_path / "run"
    untouched = json.loads((tmp_path / "profiles/neural_art.json").read_text().split("\n", 1)[1])
    assert untouched["Profiles"]["p"]["options"] == "--Os --Ocache-opt --optimization 3"


def test_a_case_without_a_profile_keeps_its_own_words(tmp_path: Path) -> None:
    case = Case("c", tmp_path / "case.toml", tmp_path, tmp_path / "m.onnx", "stm32h7",
                options=("--compression", "none", "--split-weights"))
    options = case_options(case)
    assert [u.text for u in options.units] == ["--compression none", "--split-weights"]
    assert variant(case, options, [options.units[1]], tmp_path).options == ("--split-weights",)


def _trace(n: int, culprits: set[int]) -> list[list[int]]:
    runs, test = counted(culprits)
    ddmin(list(range(n)), test)
    return runs


def test_the_runs_are_zeller_s_ddmin_traced_by_hand() -> None:
    # 4 options, culprit 0: the first half fails, then its first half
    assert _trace(4, {0}) == [[0, 1], [0]]
    assert _trace(8, {0}) == [[0, 1, 2, 3], [0, 1], [0]]
    # 4 options, culprits 1 and 3: halves pass, quarters pass, the complement of [0]
    # fails (granularity 3), then the complement of [2] (granularity 2): done
    assert _trace(4, {1, 3}) == [[0, 1], [2, 3], [0], [1], [2], [3], [1, 2, 3], [1, 3]]
    # 8 options, culprits 1 and 6: 2 halves, 4 quarters, complements [2..7] and
    # [0, 1, 4..7] (fails, granularity 3); [4..7] was run (a half), [0, 1, 6, 7] fails
    # (granularity 2); 4 singles; complement [1, 6, 7] fails (granularity 3); [6, 7] was
    # run (a quarter), [1, 7] passes, [1, 6] fails: 16 runs, none twice
    runs = _trace(8, {1, 6})
    assert runs == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1], [2, 3], [4, 5], [6, 7],
                    [2, 3, 4, 5, 6, 7], [0, 1, 4, 5, 6, 7], [0, 1, 6, 7], [0], [1], [6], [7],
                    [1, 6, 7], [1, 7], [1, 6]]


def test_the_builtin_profile_of_an_install_is_read(tmp_path: Path) -> None:
    resources = tmp_path / "install/Utilities/linux/targets/stm32/resources"
    resources.mkdir(parents=True)
    (resources / "neural_art.json").write_text(json.dumps({"Profiles": {
        "default": {"memory_pool": "./mpools/stm32n6.mpool", "options": "--Os --O3"}}}))
    case = Case("c", tmp_path / "case.toml", tmp_path, tmp_path / "m.onnx", "stm32n6",
                neural_art=NeuralArt("default"))
    options = case_options(case, tmp_path / "install")
    assert [u.text for u in options.units] == ["--Os", "--O3"]
    assert options.profile_file == resources / "neural_art.json"
    missing = Case("c", tmp_path / "case.toml", tmp_path, tmp_path / "m.onnx", "stm32n6",
                   neural_art=NeuralArt("n6-noextmem"))
    with pytest.raises(Exception, match=r"no profile 'n6-noextmem' in Profiles; found: default"):
        case_options(missing, tmp_path / "install")


def test_a_case_s_own_mpool_and_an_empty_description_survive_a_variant(tmp_path: Path) -> None:
    case = _case(tmp_path)
    text = (tmp_path / "profiles/neural_art.json").read_text().replace(
        '"./n6.mdesc"', '""')
    (tmp_path / "profiles/neural_art.json").write_text(text)
    mine = tmp_path / "mine.mpool"
    mine.write_text("{}")
    assert case.neural_art is not None
    case = Case(case.name, case.path, case.corpus_root, case.model, case.target,
                options=case.options, neural_art=NeuralArt("p", case.neural_art.file, mine))
    options = case_options(case)
    deep = tmp_path / "a" / "b"
    first = variant(case, options, list(options.units), deep)
    again = variant(case, options, list(options.units), deep)  # the folder may exist
    assert first.neural_art is not None and again.neural_art is not None
    assert first.neural_art.mpool == mine  # the case's override, not the profile's pool
    entry = json.loads(first.neural_art.file.read_text())["Profiles"]["p"]
    assert entry["memory_desc"] == ""
