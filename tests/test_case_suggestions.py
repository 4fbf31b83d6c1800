"""A misspelt case key or metric name is answered with the closest accepted one (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_conv_model

from pytest_stedge.case.load import load_cases
from pytest_stedge.errors import CaseError


def _case(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / "corpus" / "cnn"
    folder.mkdir(parents=True)
    make_conv_model(folder / "model.onnx")
    (folder / "case.toml").write_text('model = "model.onnx"\ntarget = "stm32n6"\n' + body)
    return folder / "case.toml"


@pytest.mark.parametrize(
    ("body", "key", "suggested"),
    [
        ('stage = ["generate"]\n', "stage", "stages"),
        ("[expect]\nactivation_bytes = 100\n", "expect.activation_bytes", "activations_bytes"),
        ('[baseline]\nweight_bytes = "+1%"\n', "baseline.weight_bytes", "weights_bytes"),
        ('[neural_art]\nprofile = "default"\nprofil = "x"\n', "neural_art.profil", "profile"),
    ],
)
def test_a_misspelt_name_gets_the_close_one(
    tmp_path: Path, body: str, key: str, suggested: str
) -> None:
    path = _case(tmp_path, body)
    with pytest.raises(CaseError) as caught:
        load_cases(path, tmp_path / "corpus")
    assert caught.value.key == key
    assert f"did you mean {suggested!r}?" in str(caught.value)


def test_an_unrelated_word_gets_no_guess(tmp_path: Path) -> None:
    path = _case(tmp_path, "zzzqqq = 1\n")
    with pytest.raises(CaseError) as caught:
        load_cases(path, tmp_path / "corpus")
    assert "did you mean" not in str(caught.value) and "accepted keys" in str(caught.value)


def test_every_error_of_a_case_file_is_reported_at_once(tmp_path: Path) -> None:
    path = _case(
        tmp_path,
        'stage = ["generate"]\noptions = "-O3"\n[expect]\nactivation_bytes = 100\nmacc = "many"\n',
    )
    with pytest.raises(CaseError) as caught:
        load_cases(path, tmp_path / "corpus")
    text = str(caught.value)
    assert caught.value.key == "stage"  # the first, as before
    for key in ("[options]", "[expect.activation_bytes]", "[expect.macc]"):
        assert f"also {key}:" in text, text
    assert "(4 errors in this case file)" in text


def test_a_case_with_one_error_reads_as_before(tmp_path: Path) -> None:
    path = _case(tmp_path, 'stage = ["generate"]\n')
    with pytest.raises(CaseError) as caught:
        load_cases(path, tmp_path / "corpus")
    assert "also" not in str(caught.value) and "errors in this case file" not in str(caught.value)
