"""Discovery of stedgeai installs, version banners, and running the tool safely."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_stedge.errors import ToolchainError, ToolchainNotFound
from pytest_stedge.tool.discovery import discover, parse_banner, run_tool, tail


@pytest.mark.parametrize(
    ("banner", "expected"),
    [
        ("ST Edge AI Core v4.0.1-20581 7ed50de05\n   STM32CubeAI 12.0.1-RC2", ("4.0.1", "20581", "7ed50de05")),
        ("ST Edge AI Core v2.0.0-20049\n   ISPU 1.1.0", ("2.0.0", "20049", "")),
        ("\x1b[32mST Edge AI Core v1.0.0-A1\x1b[0m", ("1.0.0", "A1", "")),
        ("STEdgeAI Core v9.0.0-19802", ("9.0.0", "19802", "")),
        ("stm32ai - Neural Network Tools for STM32 v1.4.0 (AI tools v5.2.0)", ("5.2.0", "", "")),
        ("Neural Network Tools for STM32 family v1.7.0 (stm.ai v8.1.0-19520)", ("8.1.0", "19520", "")),
    ],
)
def test_banner_formats_of_every_era(banner: str, expected: tuple[str, str, str]) -> None:
    parsed = parse_banner(banner)
    assert parsed is not None
    assert (parsed["version"], parsed["build"], parsed["revision"]) == expected


def test_installs_side_by_side_are_found_with_their_versions(fake_installs: Path) -> None:
    found = discover([fake_installs], env={}, defaults=False)
    assert [(i.version, i.build) for i in found.installs] == [("3.0.0", "20426"), ("4.0.1", "20581")]
    assert found.installs[1].executable == fake_installs / "4.0" / "Utilities" / "linux" / "stedgeai"
    assert found.installs[1].revision == "7ed50de05"
    assert any("STM32CubeAI" in c for c in found.installs[1].components)


def test_one_install_root_and_core_dir_and_packs(tmp_path: Path) -> None:
    from fake_stedgeai import make_install

    make_install(tmp_path / "core", "2.2.0")
    packs = tmp_path / "home" / "STM32Cube/Repository/Packs/STMicroelectronics/X-CUBE-AI"
    make_install(packs / "10.1.0", "2.1.0")
    found = discover([], env={"STEDGEAI_CORE_DIR": str(tmp_path / "core"), "HOME": str(tmp_path / "home")})
    assert {(i.version, i.found_by) for i in found.installs} == {
        ("2.2.0", "STEDGEAI_CORE_DIR"),
        ("2.1.0", "X-CUBE-AI packs"),
    }
    assert any("STEDGEAI_CORE_DIR" in s for s in found.searched)


def test_asking_for_a_missing_version_lists_what_exists(fake_installs: Path) -> None:
    found = discover([fake_installs], env={}, defaults=False)
    with pytest.raises(ToolchainNotFound, match=r"stedgeai 9\.9\.9 not installed\. Found: 3\.0\.0 \(.*\), 4\.0\.1"):
        found.pick(["9.9.9"])
    assert [i.version for i in found.pick(["4.0.1"])] == ["4.0.1"]


def test_a_broken_executable_is_reported_not_fatal(tmp_path: Path) -> None:
    exe = tmp_path / "bad" / "Utilities" / "linux" / "stedgeai"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho not a banner\nexit 3\n")
    exe.chmod(0o755)
    found = discover([tmp_path / "bad"], env={}, defaults=False)
    assert found.installs == []
    assert "exited with status 3" in found.problems[0]


def test_run_tool_never_uses_a_shell_and_keeps_the_log(tmp_path: Path) -> None:
    run = run_tool([sys.executable, "-c", "print('a; rm -rf /'); import sys; sys.exit(4)"], cwd=tmp_path, timeout=30)
    assert run.returncode == 4
    assert "a; rm -rf /" in run.output
    assert (tmp_path / "stedgeai.log").read_text().strip() == "a; rm -rf /"


def test_run_tool_kills_a_hang_and_its_children(tmp_path: Path) -> None:
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('started', flush=True); time.sleep(60)"
    with pytest.raises(ToolchainError) as excinfo:
        run_tool([sys.executable, "-c", code], cwd=tmp_path, timeout=1)
    assert "timed out after 1 s" in str(excinfo.value)
    assert "started" in str(excinfo.value)


def test_tail_drops_progress_bars_and_colours() -> None:
    text = "\n".join(f"line {i}" for i in range(100)) + "\nPASS:  92%|█████████▏| 158/171\n\x1b[31mE103(ModelError): x\x1b[0m"
    lines = tail(text).splitlines()
    assert len(lines) == 40
    assert lines[-1] == "E103(ModelError): x"
    assert lines[0] == "line 61"


def test_stedge_toolchains_lists_version_build_path(fake_installs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_stedge.cli.main import main

    assert main(["toolchains", "--root", str(fake_installs)]) == 0
    out = capsys.readouterr().out
    assert "3.0.0" in out and "20426 123672867" in out
    assert str(fake_installs / "4.0" / "Utilities" / "linux" / "stedgeai") in out
