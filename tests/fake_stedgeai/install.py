"""A fake ST Edge AI Core install tree (`<root>/Utilities/<os>/stedgeai` and friends)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_KB = "KBYTES"
# name, fname, address, size (kB), rights, throughput, latency, cacheable
_POOLS = [
    ("npuRAM6", "AXISRAM6", 0x34350000, 448, "ACC_WRITE", "HIGH", "LOW", False),
    ("npuRAM5", "AXISRAM5", 0x342E0000, 448, "ACC_WRITE", "HIGH", "LOW", False),
    ("npuRAM4", "AXISRAM4", 0x34270000, 448, "ACC_WRITE", "HIGH", "LOW", False),
    ("npuRAM3", "AXISRAM3", 0x34200000, 448, "ACC_WRITE", "HIGH", "LOW", False),
    ("cpuRAM2", "AXISRAM2", 0x34100000, 1024, "ACC_WRITE", "MID", "MID", False),
    ("cpuRAM1", "AXISRAM1", 0x34064000, 0, "ACC_WRITE", "MID", "MID", False),
    ("flexMEM", "AXIFLEXMEM", 0x34000000, 0, "ACC_WRITE", "MID", "MID", False),
    ("hyperRAM", "xSPI1", 0x90000000, 32 * 1024, "ACC_WRITE", "MID", "HIGH", True),
    ("octoFlash", "xSPI2", 0x71000000, 112 * 1024, "ACC_READ", "MID", "HIGH", True),
]

_BASE_OPTS = "--native-float --cache-maintenance --Ocache-opt --enable-virtual-mem-pools --Os"
# Our own profile set for the built-in neural_art.json.
_PROFILES = {
    "default": ("stm32n6.mpool", f"{_BASE_OPTS} --Oauto-sched"),
    "allmems-O3": ("stm32n6.mpool", f"{_BASE_OPTS} --optimization 3 --Omax-ca-pipe 4"),
    "allmems-O3-ec": (
        "stm32n6.mpool",
        f"{_BASE_OPTS} --optimization 3 --Omax-ca-pipe 4 --enable-epoch-controller",
    ),
    "alt-sched": ("stm32n6.mpool", f"{_BASE_OPTS} --Oalt-sched"),
    "noextmem": ("stm32n6__noextmem.mpool", f"{_BASE_OPTS} --optimization 3"),
}

_LOADER = '''"""Fake n6_loader.py of the test install: logs what it would flash, flashes nothing."""
import argparse
import datetime
import json
import pathlib
import sys

parser = argparse.ArgumentParser(prog="n6_loader.py")
parser.add_argument("--n6-loader-config", default="config_n6l.json")
parser.add_argument("--skip-build", action="store_true")
args, rest = parser.parse_known_args()
cfg_path = pathlib.Path(args.n6_loader_config)
cfg = {}
if cfg_path.is_file():
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except ValueError:
        print(f"n6_loader: {cfg_path} is not valid JSON", file=sys.stderr)
        sys.exit(2)
lines = [f"{datetime.datetime.now().isoformat()} n6_loader (fake) config={cfg_path}"]
for key in ("network.c", "project_path", "project_build_conf", "skip_external_flash_programming"):
    if key in cfg:
        lines.append(f"  {key}: {cfg[key]}")
lines.append("  would flash: network_atonbuf.xSPI2.raw, application binary")
print("\\n".join(lines))
with open(pathlib.Path(__file__).with_name("n6_loader.log"), "a", encoding="utf-8") as fh:
    fh.write("\\n".join(lines) + "\\n")
print("n6_loader: done (nothing flashed: fake install)")
'''


def _mpool(pools: list[tuple[str, str, int, int, str, str, str, bool]]) -> dict[str, Any]:
    mempools = []
    for name, fname, addr, size_kb, rights, thr, lat, cache in pools:
        mempools.append(
            {
                "fname": fname,
                "name": name,
                "fformat": "FORMAT_RAW",
                "prop": {
                    "rights": rights,
                    "throughput": thr,
                    "latency": lat,
                    "byteWidth": 8,
                    "freqRatio": 1.25 if thr == "HIGH" else 2.5,
                    "read_power": 18.5,
                    "write_power": 16.2,
                    "cacheable": "CACHEABLE_ON" if cache else "CACHEABLE_OFF",
                },
                "offset": {"value": f"0x{addr:08X}", "magnitude": "BYTES"},
                "size": {"value": str(size_kb), "magnitude": _KB},
            }
        )
    return {
        "params": {
            "param": [{"paramname": "max_onchip_sram_size", "value": "1024", "magnitude": _KB}]
        },
        "memory": {
            "cacheinfo": [
                {
                    "nlines": 512,
                    "linesize": 64,
                    "associativity": 8,
                    "bypass_enable": 1,
                    "prop": {"rights": "ACC_WRITE"},
                }
            ],
            "mem_file_prefix": "atonbuf",
            "mempools": mempools,
        },
    }


def make_install(
    root: Path,
    version: str = "4.0.1",
    *,
    config: dict[str, Any] | None = None,
    os_name: str = "linux",
) -> Path:
    """Create a fake install of ``version`` under ``root`` and return its executable.

    The executable is a Python script (shebang = this interpreter) that puts the tests folder
    on ``sys.path`` and runs :func:`fake_stedgeai.cli.main`. ``config`` (fault injection, see
    :mod:`fake_stedgeai.faults`) is baked next to it as ``stedgeai.fake.json``.
    """
    root = Path(root).resolve()
    util = root / "Utilities" / os_name
    res = util / "targets" / "stm32" / "resources"
    mp_dir = res / ("NPU/STM32N6xx" if _ver_key(version) >= (3, 0) else "mpools")
    mp_dir.mkdir(parents=True, exist_ok=True)
    (mp_dir / "stm32n6.mpool").write_text(json.dumps(_mpool(_POOLS), indent=2), encoding="utf-8")
    no_ext = [p for p in _POOLS if p[0] not in ("hyperRAM", "octoFlash")]
    (mp_dir / "stm32n6__noextmem.mpool").write_text(
        json.dumps(_mpool(no_ext), indent=2), encoding="utf-8"
    )
    rel = mp_dir.relative_to(res).as_posix()
    profiles = {
        "Globals": {},
        "Profiles": {
            name: {
                "memory_pool": f"./{rel}/{mp}",
                "options": opts,
                "description": f"fake install profile '{name}'",
            }
            for name, (mp, opts) in _PROFILES.items()
        },
    }
    (res / "neural_art.json").write_text(
        "// Built-in Neural-ART profiles of the fake stedgeai test install\n"
        + json.dumps(profiles, indent=2),
        encoding="utf-8",
    )
    cfg_dir = root / "Utilities" / "configs"
    cfg_dir.mkdir(parents=True, exist_ok=True)
    for desc in ("stm32n6.mdesc", "cortex-m55.cdesc"):
        (cfg_dir / desc).write_text("{}\n", encoding="utf-8")
    loader = root / "scripts" / "N6_scripts" / "n6_loader.py"
    loader.parent.mkdir(parents=True, exist_ok=True)
    loader.write_text(_LOADER, encoding="utf-8")
    (loader.parent / "config_n6l.json").write_text(
        json.dumps(
            {
                "network.c": "st_ai_output/network.c",
                "project_path": str(root / "Projects"),
                "project_build_conf": "N6-DK",
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    exe = util / ("stedgeai.exe" if os_name == "windows" else "stedgeai")
    cfg_file = util / "stedgeai.fake.json"
    cfg_file.write_text(json.dumps(config or {}, indent=2), encoding="utf-8")
    tests_dir = Path(__file__).resolve().parents[1]
    exe.write_text(
        f"#!{sys.executable}\n"
        f'"""Fake ST Edge AI Core {version} (pytest-stedge tests)."""\n'
        "import sys\n"
        f"sys.path.insert(0, {str(tests_dir)!r})\n"
        "from fake_stedgeai.cli import main\n"
        f"sys.exit(main(sys.argv[1:], version={version!r}, config_path={str(cfg_file)!r}, "
        f"root={str(root)!r}))\n",
        encoding="utf-8",
    )
    exe.chmod(0o755)
    return exe


def _ver_key(version: str) -> tuple[int, int]:
    parts = (version.split(".") + ["0", "0"])[:2]
    return tuple(int(p) if p.isdigit() else 0 for p in parts)  # type: ignore[return-value]
