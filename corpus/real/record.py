"""Write the record-only cases of corpus/real/ from the public runs in ../shared.

    python corpus/real/record.py [--shared ../shared] [--check]

For every case of ``runs.py`` (runs of ../shared/real-cases, chosen by hand) and of
``public_runs.py`` (every run of ../shared/public-runs, one case per model the outputs name,
written under ``public/``) it writes ``<case>/case.toml`` (the model named by hash and
public source: no model file is copied, their licences are unknown) and
``<case>/recordings.json``: each run's normalised Result as pytest-stedge's own parsers
read it (figures, epochs, pools, operator names, versions; the tool's prose is left out),
with the provenance of every file it was read from (repository, commit, path, size, md5,
taken from SOURCE.txt and checked against the file). Deterministic: the same ../shared
gives the same bytes; ``--check`` rewrites nothing and exits 1 when a file would change.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from public_runs import ROOT, SAMPLES, public_cases, read_public_sources, read_sample_sources
from runs import CASES, RealCase, Run
from sources import SourceFile, blob_url, read_source_txt

from pytest_stedge.case.recordings import SCHEMA, options_hash
from pytest_stedge.parsers.folder import merge, parse_file_runs
from pytest_stedge.parsers.run_stages import stage_of

# Options that name files, folders, the C name, the board's port or the log's verbosity:
# they do not change what the tool compiles, so two runs differing only there compare.
_DROP_WITH_VALUE = {
    "-m", "--model", "-w", "--workspace", "-o", "--output", "-n", "--name", "-d", "--desc",
    "--val-json", "-v", "--verbosity", "-vi", "--valinput", "-vo", "--valoutput",
    "-b", "--batch-size", "--address", "--type", "-t",
}
_DROP_FLAGS = {"--no-check", "--ihex"}
_WITH_VALUE = {"--target", "--st-neural-art", "--mode", "--c-api", "--optimize.export_hybrid",
               "-O", "--optimization", "--compression", "-c", "--memory-pool", "--hsp",
               "--input-data-type", "--output-data-type"}



def normalise_options(command: str) -> tuple[str, list[str]]:
    """(target, options) of a stated command line, without paths, names and ports."""
    words = command.split()[1:]  # the first word is the command (generate, validate ...)
    target, kept = "", []
    i = 0
    while i < len(words):
        word = words[i]
        value = words[i + 1] if i + 1 < len(words) else ""
        if word in _DROP_WITH_VALUE:
            i += 2
            continue
        if word in _DROP_FLAGS:
            i += 1
            continue
        if word == "--target":
            target = value
            i += 2
            continue
        if word in _WITH_VALUE:
            if word == "--st-neural-art":
                value = value.split("@", 1)[0]  # the profile's name; its file is not public
            if word == "--memory-pool":
                value = value.rsplit("/", 1)[-1]
            kept += [word, value]
            i += 2
            continue
        kept.append(word)
        i += 1
    return target, kept


def md5_of(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()



def normalised_result(result: dict[str, Any], stage: str) -> dict[str, Any]:
    """The Result as data: the tool's messages (prose) and local file paths left out."""
    out = {k: v for k, v in result.items() if k not in ("sources", "diagnostics")}
    out["stage"] = stage
    # every file of a run is read whole (its md5 checked against SOURCE.txt): no diagnostic
    # is a fact, recorded as an empty list (a signature reading them is then decided)
    out["diagnostics"] = [
        {"level": d.get("level"), "code": d.get("code"), "kind": d.get("kind")}
        for d in result.get("diagnostics") or []
        if isinstance(d, dict) and d.get("kind") != "IgnoredFile"
    ]
    validation = out.get("validation")
    if isinstance(validation, dict):
        out["validation"] = {k: v for k, v in validation.items() if k != "rows"}
    return out


def record_runs(case: RealCase, run: Run, real: Path, sources: dict[str, dict[str, SourceFile]]
                ) -> list[dict[str, Any]]:
    """The recordings of a Run's files: one per run of the tool they hold (an AI Studio log
    or a Dev Cloud console holds a generate, then the validate on the board), each
    recorded as its own stage and read from its own files only, never merged."""
    per_file = [parse_file_runs(real / rel) for rel in run.files]
    commands = list(dict.fromkeys(_command(r) for results in per_file for r in results))
    if len(commands) < 2:
        return [record_run(case, run, real, sources)]
    records = []
    for command in commands:
        files = tuple(rel for rel, results in zip(run.files, per_file)
                      if any(_command(r) == command for r in results))
        stage = run.stage if command == "validate" else None
        records.append(record_run(case, Run(run.variant, run.version, files, run.flow, stage),
                                  real, sources, command))
    # One capture is one session of the tool: a run that states no model hash (a 4.0.0
    # Developer Cloud validate prints no summary) ran the model its capture's other runs
    # name, when they all name the same one.
    named = {r["model_sha256"] for r in records if r["model_sha256"] != "md5:"}
    if len(named) == 1:
        for record in records:
            if record["model_sha256"] == "md5:":
                record["model_sha256"] = next(iter(named))
                record["provenance"]["model_from"] = "the other runs of the same capture"
    return records


def _command(result: dict[str, Any]) -> str:
    if any(s.endswith((".npz", ".csv")) for s in result.get("sources", [])):
        return "validate"
    return str(result.get("command"))


def record_run(case: RealCase, run: Run, real: Path, sources: dict[str, dict[str, SourceFile]],
               command: str | None = None) -> dict[str, Any]:
    """One run: parsed from its files (the runs of ``command`` only, where given), with
    provenance; refuses a file SOURCE.txt does not describe or whose md5 differs from it."""
    parsed = []
    provenance_files = []
    for rel in run.files:
        path = real / rel
        folder, inner = rel.split("/", 1)
        entry = sources[folder].get(inner)
        if entry is None:
            raise SystemExit(f"{rel}: not listed in {folder}/SOURCE.txt")
        actual = md5_of(path)
        if actual != entry.md5:
            raise SystemExit(f"{rel}: md5 {actual} differs from SOURCE.txt's {entry.md5}")
        parsed.append(next(r for r in parse_file_runs(path)
                           if command is None or _command(r) == command))
        provenance_files.append({
            "repository": entry.repository, "commit": entry.commit, "path": entry.path,
            "size": entry.size, "md5": entry.md5, "url": blob_url(entry),
        })
    ordered = sorted(range(len(parsed)), key=lambda i: not run.files[i].endswith(".json"))
    result = merge([parsed[i] for i in ordered])
    stage = run.stage or stage_of(result)
    primary = sources[run.files[0].split("/", 1)[0]][run.files[0].split("/", 1)[1]]
    target, options = normalise_options(primary.command)
    target = target or case.target
    stated: list[str] | None = options
    # a run whose command line no file states: its options are unknown, so it compares with
    # no other run (a hash of its own first file, never equal to another run's)
    stated_hash = options_hash(target, options) if primary.command else f"unstated-{primary.md5[:16]}"
    if not primary.command:
        stated = None
    model_hash = str((result.get("model") or {}).get("hash") or "").lower().removeprefix("0x")
    identity = _model_sha256(real / case.shared, model_hash)
    repositories = sorted({f["repository"] for f in provenance_files})
    return {
        "case": case.name if run.variant is None else f"{case.name}/{run.variant}",
        "stage": stage,
        "version": run.version,
        "model_sha256": identity or f"md5:{model_hash}",
        "options": stated,
        "options_hash": stated_hash,
        "provenance": {
            "repository": repositories[0] if len(repositories) == 1 else repositories,
            "flow": run.flow,
            "tool": primary.tool,
            "command": primary.command.split()[0] if primary.command else "",
            "model_hash": model_hash,
            "files": provenance_files,
        },
        "result": normalised_result(result, stage),
    }


def model_table(case: RealCase, real: Path, sources: dict[str, dict[str, SourceFile]]) -> dict[str, Any]:
    """The ``model = { ... }`` table of a case: hashes and the public URL, never the file."""
    if case.model is None:
        assert case.model_md5 and case.model_file and case.model_source
        return {"file": case.model_file, "md5": case.model_md5, "source": case.model_source,
                "licence": "unknown"}
    path = real / case.model
    folder, inner = case.model.split("/", 1)
    entry = sources[folder][inner]
    data = path.read_bytes()
    if hashlib.md5(data).hexdigest() != entry.md5:
        raise SystemExit(f"{case.model}: md5 differs from SOURCE.txt")
    return {
        "file": path.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "md5": entry.md5,
        "size": len(data),
        "source": blob_url(entry),
        "licence": "unknown",
    }


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:_}" if value >= 10_000 else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def case_toml(case: RealCase, model: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """The case file: what the case is, its model by hash and source, its stages."""
    lines = [
        (
            f"# Written by corpus/real/record.py from ../shared/{case.root}/"
            f"{case.shared} (SOURCE.txt); rerun it instead of editing."
        ),
        f"# Why it is here: {case.why}.",
        "# Record-only: the model is public but its licence is unknown, so the corpus names it",
        "# by hash and source; pass --stedge-models DIR to run the oracle on your copy.",
        f"description = {_toml_value(case.description)}",
        f"target = {_toml_value(case.target)}",
        f"markers = {_toml_value(list(case.markers))}",
        "model = " + _toml_value(model),
    ]
    variants = sorted({r["case"].split("/", 1)[1] for r in runs if "/" in r["case"]})
    if not variants:
        options, profile = deployment_of(runs)
        if options:
            lines.append(f"options = {_toml_value(options)}")
        lines.append(f"stages = {_toml_value(sorted({r['stage'] for r in runs}))}")
        if profile is not None:
            lines += ["", "[neural_art]  # as the recorded runs (the profile's file is not public)"]
            if any(r["options"] is None for r in runs):
                lines.append("# 'default': no file of a run states its command line, only NPU epochs")
            lines.append(f"profile = {_toml_value(profile)}")
    if case.baseline:
        lines += ["", "[baseline]  # bands against the previous recorded version"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in sorted(case.baseline.items())]
    for variant in variants:
        mine = [r for r in runs if r["case"] == f"{case.name}/{variant}"]
        options, profile = deployment_of(mine)
        lines += [
            "",
            f"[variants.{variant}]",
            f"description = {_toml_value(case.description + ': ' + case.variants[variant])}",
        ]
        if options:
            lines.append(f"options = {_toml_value(options)}")
        lines.append(f"stages = {_toml_value(sorted({r['stage'] for r in mine}))}")
        if profile is not None:
            lines.append(f"neural_art = {_toml_value({'profile': profile})}")
    return "\n".join(lines) + "\n"


# The options of a run's command line that decide how the model is deployed (what the
# oracle's floor follows): the case states them, so it says what its recordings did.
_DEPLOYMENT_FLAGS = ("--no-inputs-allocation", "--no-outputs-allocation")
_DEPLOYMENT_VALUED = ("--input-data-type", "--output-data-type")


def deployment_of(runs: list[dict[str, Any]]) -> tuple[list[str], str | None]:
    """The deployment options every run shares, and the Neural-ART profile they used (the
    one most runs name, the newest run's on a tie; None without --st-neural-art)."""
    shared: list[str] | None = None
    profiles: list[str] = []
    for run in sorted(runs, key=lambda r: r["version"]):
        words, kept = run["options"], []
        if words is None:  # no file states the command line: only whether NPU epochs exist
            if (run.get("result") or {}).get("neural_art"):
                profiles.append("default")
            continue
        for k, word in enumerate(words):
            value = words[k + 1] if k + 1 < len(words) else ""
            if word in _DEPLOYMENT_FLAGS:
                kept.append(word)
            elif word in _DEPLOYMENT_VALUED:
                kept += [word, value]
            elif word == "--st-neural-art":
                profiles.append(value or "default")
        shared = kept if shared is None else [w for w in shared if w in kept]
    if not profiles:
        return shared or [], None
    best = max(profiles, key=lambda p: (profiles.count(p), max(i for i, q in enumerate(profiles) if q == p)))
    return shared or [], best


def build(shared: Path) -> dict[Path, str]:
    """Every file to write, relative to corpus/real/, with its text."""
    public, skipped = public_cases(shared)
    for folder, reason in skipped:
        print(f"not recorded: {folder}: {reason}", file=sys.stderr)
    pooled = _pooled_sources(shared, public)
    out: dict[Path, str] = {}
    for case in (*CASES, *public):
        real = shared / case.root
        if case.root:
            folders = {case.shared} | {f.split("/", 1)[0] for r in case.runs for f in r.files}
            sources = {f: read_source_txt(real / f) for f in sorted(folders)}
        else:
            sources = pooled
        model = model_table(case, real, sources)
        runs = []
        for run in case.runs:
            runs.extend(record_runs(case, run, real, sources))
        runs.sort(key=lambda r: (r["case"], r["stage"], r["version"]))
        keys = [(r["case"], r["stage"], r["version"]) for r in runs]
        if len(set(keys)) != len(keys):
            raise SystemExit(f"{case.name}: two runs of the same case, stage and version")
        where = Path(case.folder or case.name)
        out[where / "case.toml"] = case_toml(case, model, runs)
        document = {"schema": SCHEMA, "written_by": "corpus/real/record.py", "runs": runs}
        out[where / "recordings.json"] = json.dumps(document, indent=1, sort_keys=True) + "\n"
    return out


def _pooled_sources(shared: Path, cases: list[RealCase]) -> dict[str, dict[str, SourceFile]]:
    """The files of public-runs and stedgeai-samples folders the cases read, keyed
    ``<top folder> -> <run folder>/<file>`` (a public case's paths start at ../shared)."""
    pooled: dict[str, dict[str, SourceFile]] = {ROOT: {}, SAMPLES: {}}
    folders = sorted({f.rsplit("/", 1)[0] for c in cases for r in c.runs for f in r.files}
                     | {c.shared for c in cases})
    for folder in folders:
        top, name = folder.split("/", 1)
        read = read_public_sources if top == ROOT else read_sample_sources
        for file, entry in read(shared / folder).items():
            pooled[top][f"{name}/{file}"] = entry
    return pooled


def _model_sha256(folder: Path, md5: str) -> str | None:
    """sha256 of the model file whose md5 the run's outputs state, when ../shared has it
    (the tool prints the md5 of its input; the store speaks sha256)."""
    for candidate in sorted(folder.rglob("*")):
        if candidate.suffix in (".onnx", ".tflite", ".h5", ".keras") and "_OE_" not in candidate.name:
            data = candidate.read_bytes()
            if md5 and hashlib.md5(data).hexdigest() == md5:
                return hashlib.sha256(data).hexdigest()
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=str(HERE.parents[2] / "shared"),
                        help="The shared folder holding real-cases/ and public-runs/ (default: ../shared)")
    parser.add_argument("--check", action="store_true",
                        help="Write nothing; exit 1 when a committed file differs")
    args = parser.parse_args(argv)
    shared = Path(args.shared)
    if not (shared / "real-cases").is_dir():
        print(f"record.py: error: no real-cases folder in {shared}", file=sys.stderr)
        return 2
    files = build(shared)
    stale = [p for p, text in files.items()
             if not (HERE / p).is_file() or (HERE / p).read_text(encoding="utf-8") != text]
    # a public case no run names any more (the generated folders under public/ only)
    written = {p.parent for p in files}
    gone = sorted(d for d in (HERE / "public").glob("*") if d.is_dir() and d.relative_to(HERE) not in written)
    if args.check:
        for path in stale:
            print(f"differs: corpus/real/{path}")
        for folder in gone:
            print(f"no longer written: corpus/real/{folder.relative_to(HERE)}")
        print(f"{len(files) - len(stale)} of {len(files)} files up to date")
        return 1 if stale or gone else 0
    for folder in gone:
        for child in sorted(folder.iterdir()):
            child.unlink()
        folder.rmdir()
        print(f"removed corpus/real/{folder.relative_to(HERE)}")
    for path in stale:
        (HERE / path).parent.mkdir(parents=True, exist_ok=True)
        (HERE / path).write_text(files[path], encoding="utf-8")
        print(f"wrote corpus/real/{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
