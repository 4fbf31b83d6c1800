"""Which runs of ../shared/public-runs become which corpus case (the table record.py reads
beside runs.py's hand-written one).

Built from the folder listing and each folder's SOURCE.txt, in sorted order, so the same
../shared gives the same cases: one case per model the outputs name (the MD5 the tool
printed of its input model, ``model_hash``), holding every version that compiled it, and a
variant per publishing repository when several publish the same model. A run whose outputs
name no model hash, or from which no figure can be read, is not recorded: :func:`public_cases`
returns it with the reason, and record.py prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runs import RealCase, Run
from sources import SourceFile, blob_url

ROOT = "public-runs"
SAMPLES = "stedgeai-samples"
MODEL_SUFFIXES = (".h5", ".tflite", ".onnx", ".keras")
# ../shared/public-runs/<target>-<version>-<command>-<model>: the listing INDEX.md describes
_FOLDER_RE = re.compile(r"^(?P<target>stm32[a-z0-9]*)-(?P<version>\d+\.\d+\.\d+)-(?P<command>[a-z]+)-")


@dataclass(frozen=True)
class PublicRun:
    """One folder of public-runs as its SOURCE.txt states it."""

    folder: str  # relative to ../shared: public-runs/<name> or stedgeai-samples/<name>
    repository: str
    version: str  # as the tool states it (x.y.z)
    command: str
    target: str  # "stm32n6npu" = STM32N6 with --st-neural-art
    model_name: str
    model_md5: str | None  # the model_hash the outputs state
    files: tuple[str, ...]  # output files (not the model), as SOURCE.txt lists them
    model_file: str | None  # the committed model whose MD5 is the stated hash, when present
    first_url: str  # the public address of its first output file


def read_header(folder: Path) -> dict[str, str]:
    """The facts before the file list of a public-runs SOURCE.txt: ``repo``, ``tool version``,
    ``command``, ``target``, ``model``, ``model hash``, ``parameters``."""
    header: dict[str, str] = {}
    text = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    for line in text.split("\nfiles ", 1)[0].splitlines():
        if line.startswith("parameters ("):  # "parameters (as stated, ...): generate --target ..."
            header["parameters"] = line.split("): ", 1)[1].strip() if "): " in line else ""
            continue
        # "command: generate   target: stm32" and "model (as stated): M   model hash stated: H"
        for part in re.split(r"\s{3,}", line):
            key, sep, value = part.partition(": ")
            if sep:
                key = {"model (as stated)": "model", "model hash stated": "model hash"}.get(key, key)
                header.setdefault(key.strip(), value.strip())
    return header


def read_public(folder: Path) -> PublicRun:
    """One public-runs folder (raises SystemExit naming the file when it is not as INDEX.md says)."""
    header = read_header(folder)
    match = _FOLDER_RE.match(folder.name)
    if not match or "repo" not in header:
        raise SystemExit(f"{folder}/SOURCE.txt: not a public-runs folder as INDEX.md describes")
    entries = read_public_sources(folder)
    stated = header.get("model hash", "")
    md5 = stated.lower().removeprefix("0x") if re.fullmatch(r"0x[0-9a-fA-F]{32}", stated) else None
    model_file = next((name for name, e in sorted(entries.items())
                       if md5 and e.md5 == md5 and Path(name).suffix in (".h5", ".tflite", ".onnx", ".keras")),
                      None)
    outputs = tuple(sorted(n for n in entries if n != model_file and not n.endswith((".h5", ".tflite", ".onnx", ".keras"))))
    model_name = header.get("model") or folder.name
    return PublicRun(
        folder=f"{ROOT}/{folder.name}", repository=header["repo"], version=match["version"],
        command=match["command"], target=match["target"], model_name=model_name,
        model_md5=md5, files=outputs, model_file=model_file,
        first_url=_url(entries[outputs[0]]) if outputs else header["repo"],
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")[:40] or "model"


def _owner(repository: str) -> str:
    return _slug(repository.rstrip("/").split("/")[-2])


def public_cases(shared: Path) -> tuple[list[RealCase], list[tuple[str, str]]]:
    """The cases made of public-runs and of the whole runs of stedgeai-samples, and the
    (folder, reason) of each run left out."""
    root = shared / ROOT
    if not root.is_dir():
        return [], []
    runs = [read_public(p) for p in sorted(root.iterdir()) if (p / "SOURCE.txt").is_file()]
    samples, skipped_samples = sample_runs(shared)
    runs += samples
    skipped = [(r.folder, "its outputs state no model hash: the model cannot be identified")
               for r in runs if r.model_md5 is None] + skipped_samples
    by_model: dict[str, list[PublicRun]] = {}
    for run in runs:
        if run.model_md5 is not None:
            by_model.setdefault(run.model_md5, []).append(run)
    cases = []
    for md5, group in sorted(by_model.items(), key=lambda kv: (_slug(kv[1][0].model_name), kv[0])):
        cases.append(_case(md5, group))
    return cases, skipped


def _case(md5: str, group: list[PublicRun]) -> RealCase:
    first = group[0]
    stem = Path(first.model_name).stem if Path(first.model_name).suffix in (".h5", ".tflite", ".onnx") else first.model_name
    name = f"{_slug(stem)}-{md5[:8]}"
    repositories = sorted({r.repository for r in group})
    # one case holds every version of the model, so its versions compare; two runs of one
    # version and command (two repositories, a regeneration) become variants, named by owner
    counts: dict[tuple[str, str], int] = {}
    for run in group:
        counts[(run.version, run.command)] = counts.get((run.version, run.command), 0) + 1
    collide = any(n > 1 for n in counts.values())
    runs = []
    variants: dict[str, str] = {}
    taken: set[tuple[str, str, str]] = set()
    for run in group:
        variant = None
        if collide:
            variant = _owner(run.repository)
            number = 1
            while (variant, run.version, run.command) in taken:
                number += 1
                variant = f"{_owner(run.repository)}-{number}"
            taken.add((variant, run.version, run.command))
            variants[variant] = f"as {run.repository.removeprefix('https://github.com/')} published it"
        flow = f"{_product(run.version)} {run.version}, {run.command} --target {run.target}"
        runs.append(Run(variant, run.version, tuple(f"{run.folder}/{f}" for f in run.files), flow))
    versions = sorted({r.version for r in group}, key=lambda v: tuple(int(x) for x in v.split(".")))
    targets = sorted({r.target for r in group})
    target = "stm32n6" if targets[0].startswith("stm32n6") else targets[0]
    verified = next((r for r in group if r.model_file), None)
    return RealCase(
        name=name,
        shared=(verified or first).folder,
        description=(f"{first.model_name} on {', '.join(targets)}: public {_product(first.version)} "
                     f"run(s) of {', '.join(r.rstrip('/').split('/')[-2] for r in repositories)} on GitHub"),
        why=(f"a real user model compiled by {', '.join(versions)} "
             f"({'the model file is public' if verified else 'only the model hash the tool printed survives'})"),
        target=target,
        markers=("real", "public", "n6" if target == "stm32n6" else "mcu"),
        runs=tuple(runs),
        model=f"{verified.folder}/{verified.model_file}" if verified and verified.model_file else None,
        model_md5=None if verified else md5,
        # a plain file name (the case format's): "best (1).tflite" -> "best_1_.tflite"
        model_file=None if verified else re.sub(r"[^\w.+\-]", "_", first.model_name),
        model_source=None if verified else first.first_url,
        variants=variants,
        root="",
        folder=f"public/{name}",
    )


def _product(version: str) -> str:
    """X-CUBE-AI (5.x-9.x, stm32ai) or ST Edge AI Core (1.x-4.x), as the reports name them."""
    return "X-CUBE-AI" if int(version.split(".")[0]) >= 5 else "ST Edge AI Core"


def read_public_sources(folder: Path) -> dict[str, SourceFile]:
    """The file list of a public-runs SOURCE.txt (``- name`` then indented ``key: value``)."""
    entries: dict[str, SourceFile] = {}
    text = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    body = text.split("\nfiles ", 1)[1] if "\nfiles " in text else ""
    name, fields = None, {}
    header = read_header(folder)
    repo = header.get("repo", "")

    def close() -> None:
        if name and {"path", "commit", "size", "md5"} <= set(fields):
            entries[name] = SourceFile(repo, fields["path"], fields["commit"], int(fields["size"]),
                                       fields["md5"], header.get("parameters", ""),
                                       header.get("tool version", "").split(" (")[0])

    for line in body.splitlines()[1:]:
        if line.startswith("- "):
            close()
            name, fields = line[2:].strip(), {}
        elif line.startswith("    ") and ":" in line:
            key, value = line.strip().split(":", 1)
            fields.setdefault(key.strip(), value.strip())
        elif line and not line.startswith(" "):
            break  # "model check: ..." ends the list
    close()
    return entries


def _url(entry: SourceFile) -> str:
    return blob_url(entry)


def sample_runs(shared: Path) -> tuple[list[PublicRun], list[tuple[str, str]]]:
    """The whole runs of ../shared/stedgeai-samples that no other folder holds: a folder
    whose outputs parse as one run with figures and a model hash. Folders of profiles and
    memory pools are no run; a folder of several runs, or of a run without its figures, is
    returned with the reason."""
    import hashlib


    root = shared / SAMPLES
    if not root.is_dir():
        return [], []
    held = {hashlib.md5(p.read_bytes()).hexdigest()
            for top in (ROOT, "real-cases") for p in sorted((shared / top).rglob("*"))
            if p.is_file() and p.name != "SOURCE.txt"}
    runs, skipped = [], []
    for folder in sorted(p for p in root.iterdir() if (p / "SOURCE.txt").is_file()):
        entries = read_sample_sources(folder)
        outputs = sorted(n for n in entries if _is_output(n))
        if not outputs:
            continue  # profiles, memory pools: no run
        if all(entries[n].md5 in held for n in outputs):
            continue  # the same files are recorded from real-cases or public-runs
        where = f"{SAMPLES}/{folder.name}"
        found, reasons = _sample_folder_runs(folder, where, entries, outputs)
        runs += found
        skipped += reasons
    return runs, skipped


def _sample_folder_runs(
    folder: Path, where: str, entries: dict[str, SourceFile], outputs: list[str]
) -> tuple[list[PublicRun], list[tuple[str, str]]]:
    """The runs of one samples folder: its output files parsed one by one and grouped by
    what they state (command, tool version, model hash): a folder may hold the analyze,
    generate and validate reports of one model, each a run of its own."""
    from pytest_stedge.errors import StedgeError
    from pytest_stedge.parsers import parse_file
    from pytest_stedge.result import flat_metrics

    groups: dict[tuple[str, str, str], list[tuple[str, dict[str, object]]]] = {}
    reasons = []
    for name in outputs:
        try:
            result = parse_file(folder / name)
        except StedgeError:
            continue  # not a result file (a c_graph.json, a runner log)
        model = result.get("model") or {}
        md5 = str(model.get("hash") or "").lower().removeprefix("0x")
        version = str((result.get("tool") or {}).get("version") or "")
        groups.setdefault((str(result.get("command") or "generate"), version, md5), []).append((name, result))
    # a file that states no model hash (an N6 text report) belongs to the run of its command
    # and version when exactly one model hash is stated there
    for command, version, md5 in [k for k in groups if not k[2]]:
        stated = [k for k in groups if k[:2] == (command, version) and k[2]]
        if len(stated) == 1:
            groups[stated[0]] += groups.pop((command, version, md5))
    runs = []
    for (command, version, md5), members in sorted(groups.items()):
        names = [n for n, _r in members]
        label = f"{where} ({', '.join(names)})"
        if not any(flat_metrics(r) for _n, r in members):  # type: ignore[arg-type]
            reasons.append((label, "no figure can be read from it (the run failed, or the file is cut)"))
            continue
        errors = [d for _n, r in members for d in r.get("diagnostics") or []  # type: ignore[attr-defined]
                  if isinstance(d, dict) and d.get("level") == "error"]
        if errors:
            # the user's run failed (a weights file that does not fit the model): replayed,
            # it would fail every corpus session with no known bug to explain it
            reasons.append((label, f"the run ended in an error the tool printed ({errors[0].get('kind') or errors[0].get('code')})"))
            continue
        if not re.fullmatch(r"[0-9a-f]{32}", md5):
            reasons.append((label, "it states no model hash: the model cannot be identified"))
            continue
        if not re.fullmatch(r"\d+\.\d+\.\d+", version):
            reasons.append((label, f"it states no x.y.z tool version ({version or 'none'})"))
            continue
        first = dict(members[0][1])
        model = first.get("model") or {}
        target = "stm32n6npu" if any(r.get("neural_art") for _n, r in members) else str(first.get("target") or "stm32")
        runs.append(PublicRun(
            folder=where, repository=entries[names[0]].repository, version=version,
            command=command, target=target,
            model_name=str(model.get("file") or model.get("name") or folder.name),  # type: ignore[union-attr]
            model_md5=md5, files=tuple(sorted(names)), model_file=None,
            first_url=_url(entries[names[0]]),
        ))
    return runs, reasons


def _is_output(name: str) -> bool:
    """A file the tool writes for a run (reports, c_info, logs), not a profile or a pool."""
    lower = name.lower()
    if lower.endswith((".mpool", ".mdesc", ".ini")) or "neuralart" in lower or "mempools" in lower:
        return False
    return lower.endswith((".txt", ".json", ".log"))


def read_sample_sources(folder: Path) -> dict[str, SourceFile]:
    """The ``file:`` blocks of a stedgeai-samples SOURCE.txt (repo, path, commit, stated
    version); size and MD5 are the file's own (the samples' SOURCE.txt states none)."""
    import hashlib

    entries: dict[str, SourceFile] = {}
    text = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    for block in re.split(r"\n(?=file: )", text):
        lines = block.strip().splitlines()
        if not lines or not lines[0].startswith("file: "):
            continue
        name = lines[0][len("file: "):].strip()
        fields = dict(line.strip().split(": ", 1) for line in lines[1:] if ": " in line)
        path = folder / name
        if not path.is_file() or not {"repo", "path", "commit"} <= set(fields):
            continue
        data = path.read_bytes()
        entries[name] = SourceFile(fields["repo"], fields["path"], fields["commit"], len(data),
                                   hashlib.md5(data).hexdigest(), "", fields.get("stated version", ""))
    return entries
