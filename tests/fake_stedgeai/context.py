"""The state of one fake `stedgeai` invocation, shared by the writers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analysis import ModelFacts
from .deploy import Deployment
from .profiles import Profile
from .versions import ToolVersion


@dataclass
class Run:
    """One invocation: what was asked, what the model is, how it was deployed."""

    argv: list[str]
    command: str
    ver: ToolVersion
    facts: ModelFacts
    dep: Deployment
    opts: dict[str, Any]
    name: str
    target: str
    output: Path
    workspace: Path
    root: Path
    profile: Profile | None
    faults: dict[str, Any]
    validation: dict[str, Any] | None = None
    files: list[Path] = field(default_factory=list)

    @property
    def npu(self) -> bool:
        """True for STM32N6 with --st-neural-art."""
        return self.profile is not None

    @property
    def series(self) -> str:
        """`target/series` value of the summary."""
        if self.npu:
            return "stm32n6npu"
        return self.target

    @property
    def st_ai_api(self) -> bool:
        """The st-ai C API (default from 3.0)."""
        api = self.opts.get("c_api")
        return api == "st-ai" or (api is None and self.ver.key >= (3, 0, 0))

    @property
    def compiler_args(self) -> str:
        """The `Compiler arguments:` line of N6 reports."""
        assert self.profile is not None
        stem = self.facts.path.stem
        nad = self.workspace / f"neural_art__{self.name}"
        cfg = self.root / "Utilities" / "configs"
        mdesc = self.profile.mdesc_file or cfg / "stm32n6.mdesc"
        return (
            f" -i {self.output / f'{stem}_OE_3_3_1.onnx'} --json-quant-file "
            f"{self.output / f'{stem}_OE_3_3_1_Q.json'} -g {self.name}.c --load-mdesc "
            f"{mdesc} --load-mpool {self.profile.mpool_file} --load-cdesc "
            f"{cfg / 'cortex-m55.cdesc'} --save-mpool-file {nad / 'stm32n6.mpool'} "
            f"--out-dir-prefix {nad}/ --network-name {self.name} {self.profile.options} "
            f"--output-info-file c_info.json"
            + (" --generate-stai" if self.ver.key >= (3, 0, 0) else "")
        )
