"""Version facts of the fake tool: banner, build, Neural-ART compiler and layout switches."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

# Builds as printed by the real releases (stedgeai-formats.md §1.2, §1.3).
_KNOWN: dict[str, tuple[str, str | None, str]] = {
    "2.0.0": ("20049", None, "1.0.0-16"),
    "2.1.0": ("20194", "329b0e98d", "1.1.0-31"),
    "2.2.0": ("20266", "2adc00962", "1.1.1-14"),
    "3.0.0": ("20426", "123672867", "1.1.3-8"),
    "4.0.0": ("20500", "359356bb0", "1.1.3-262"),
    "4.0.1": ("20581", "7ed50de05", "1.1.3-275"),
}

# Component lines of `--version`; only the STM32CubeAI line is relied upon by other tools.
_COMPONENTS: dict[str, list[str]] = {
    "2.0.0": ["ISPU 1.1.0", "MLC 1.1.0", "StellarStudioAI 2.0.0", "STM32CubeAI 10.0.0"],
    "4.0.1": ["ISPU 2.0.1-RC2", "MLC 1.2.4-RC2", "STM32CubeAI 12.0.1-RC2"],
}


@dataclass(frozen=True)
class ToolVersion:
    """One fake release: its number, build tag, git revision and compiler version."""

    version: str
    build: str
    revision: str | None
    compiler: str

    @property
    def key(self) -> tuple[int, int, int]:
        """Numeric (major, minor, micro) for comparisons."""
        parts = [int(p) if p.isdigit() else 0 for p in self.version.split(".")[:3]]
        while len(parts) < 3:
            parts.append(0)
        return parts[0], parts[1], parts[2]

    @property
    def full(self) -> str:
        """`4.0.1-20581 7ed50de05` as in c_info `environment.tools[0].version`."""
        tag = f"{self.version}-{self.build}"
        return f"{tag} {self.revision}" if self.revision else tag

    @property
    def banner(self) -> str:
        """First line of `--version` and of every report."""
        return f"ST Edge AI Core v{self.full}"

    def components(self) -> list[str]:
        """Indented component lines printed under the banner by `--version`."""
        if self.version in _COMPONENTS:
            return list(_COMPONENTS[self.version])
        major, minor, micro = self.key
        cube = f"{major + 8}.{minor}.{micro}"
        return [
            f"ISPU {max(1, major - 2)}.{minor}.{micro}",
            f"MLC 1.{minor}.{micro}",
            f"STM32CubeAI {cube}",
        ]

    @property
    def cube_ai(self) -> str:
        """X-CUBE-AI number paired with this core (`10.2.0` for 2.2.0)."""
        for line in self.components():
            if line.startswith("STM32CubeAI "):
                return line.split()[1].split("-")[0]
        return "0.0.0"


def tool_version(version: str) -> ToolVersion:
    """The facts of ``version``; unknown versions get a stable synthetic build and revision."""
    if version in _KNOWN:
        build, rev, compiler = _KNOWN[version]
        return ToolVersion(version, build, rev, compiler)
    digest = hashlib.sha1(version.encode()).hexdigest()
    build = str(20600 + int(digest[:4], 16) % 900)
    return ToolVersion(version, build, digest[:9], f"1.1.3-{300 + int(digest[4:6], 16)}")
