"""The known-bug registry: ``corpus/bugs/<id>.toml`` files, loaded and checked.

Format::

    id = "prelu-sw-int8"                  # must equal the file name
    title = "PReLU runs in software on int8 models"
    source = "https://..."                # where it was reported (a link or a citation)
    affected = "<2.2"                     # PEP 440 specifiers, or "unknown"
    fixed_in = "2.2.0"                    # optional: first version known to be fixed
    status = "fixed"                      # open | fixed | unknown
    reproducers = ["mtcnn-rnet/int8"]     # corpus case names that show it
    signature = '"PRelu" in software_ops' # pytest_stedge.bugs.signature grammar
    notes = "..."                         # optional
    stages = ["validate-target"]          # optional: stages that can show it (default: all)
    kind = "bug"                          # optional: bug (reported by users) or finding
                                          # (a regression seen in recorded public runs)
    links = [{ title = "...", url = "https://..." }]   # public sources, each a URL
    scope = { cases = ["n6-micro-*"], markers = ["n6"] }  # optional: cases beyond the
                                          # reproducers whose findings are evidence too

A bug's evidence is the findings of its reproducers, of the cases that list it and of the
cases its ``scope`` names (case-name patterns, case markers: a model family); a signature
that matches anywhere else is a similar signature, never the bug reproduced
(:mod:`pytest_stedge.bugs.verdict`).

``Bug.affects(version)`` is True inside ``affected``, False at or after
``fixed_in``, and None (unknown) anywhere else: the registry never guesses about a
version nobody reported on.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_stedge.errors import CaseError

from .signature import UNKNOWN, Signature, SignatureError, parse_signature

STATUSES = ("open", "fixed", "unknown")
REQUIRED = ("id", "title", "source", "affected", "status", "reproducers", "signature")
OPTIONAL = ("fixed_in", "notes", "stages", "kind", "links", "scope")
KINDS = ("bug", "finding")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]*$")
# stedgeai prints "4.0.1-20581 359356bb0": the release is what the registry speaks about.
_RELEASE_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")

FINDING_STATUSES = ("reproduced", "not-reproduced", "unknown")


def release_of(version: str) -> Version | None:
    """The release part of a toolchain version string (``4.0.1-20581`` -> 4.0.1), or None."""
    match = _RELEASE_RE.match(str(version))
    if not match:
        return None
    try:
        return Version(match.group(1))
    except InvalidVersion:  # pragma: no cover - the regex only lets digits and dots through
        return None


@dataclass(frozen=True)
class Finding:
    """What one item says about one bug (the store's findings row)."""

    bug_id: str
    status: str  # reproduced | not-reproduced | unknown
    evidence: dict[str, Any]

    def to_row(self) -> dict[str, Any]:
        """The ``{bug_id, status, evidence}`` dict :class:`pytest_stedge.store.database.ItemRow` holds."""
        return {"bug_id": self.bug_id, "status": self.status, "evidence": self.evidence}


@dataclass(frozen=True)
class Bug:
    """One registry entry."""

    id: str
    title: str
    source: str
    affected: SpecifierSet | None  # None: the registry does not know
    status: str
    reproducers: tuple[str, ...]
    signature: Signature
    path: Path
    fixed_in: Version | None = None
    notes: str = ""
    stages: tuple[str, ...] = ()  # empty: every stage
    kind: str = "bug"
    links: tuple[tuple[str, str], ...] = ()  # (title, https URL)
    scope_cases: tuple[str, ...] = ()  # fnmatch patterns of case names
    scope_markers: tuple[str, ...] = ()

    def in_scope(self, case_name: str | None, markers: Iterable[str] = ()) -> bool:
        """Whether findings on this case are the bug's evidence: a reproducer, or a case its
        ``scope`` names."""
        if not case_name:
            return False
        if case_name in self.reproducers:
            return True
        if any(fnmatchcase(case_name, pattern) for pattern in self.scope_cases):
            return True
        return bool(set(self.scope_markers) & set(markers))

    def observable_on(self, stage: str | None) -> bool:
        """Whether an item of ``stage`` can show this bug (no finding on other stages)."""
        return not self.stages or stage is None or stage in self.stages

    def affects(self, version: str) -> bool | None:
        """Whether ``version`` has this bug: True, False, or None when nobody knows."""
        release = release_of(version)
        if release is None:
            return None
        # an explicitly affected version wins (a regression after a fix is listed there)
        if self.affected is not None and self.affected.contains(release, prereleases=True):
            return True
        if self.fixed_in is not None and release >= self.fixed_in:
            return False
        return None

    def matches(self, env: Mapping[str, Any]) -> bool | None:
        """The signature on one item: True, False, or None when a figure it reads is missing."""
        value = self.signature.evaluate(env)
        return None if value is UNKNOWN else bool(value)

    def explains(self, env: Mapping[str, Any], version: str) -> bool:
        """Whether this bug explains a failure: it affects ``version`` and its signature matches."""
        return self.affects(version) is True and self.matches(env) is True

    def link_text(self) -> str:
        """``id (source)``, for xfail reasons and summaries."""
        return f"{self.id} ({self.source})"


@dataclass
class BugRegistry:
    """Every known bug of a corpus, by id."""

    folder: Path | None = None
    bugs: dict[str, Bug] = field(default_factory=dict)

    def __contains__(self, bug_id: object) -> bool:
        return bug_id in self.bugs

    def __iter__(self) -> Iterator[Bug]:
        return iter(self.bugs[k] for k in sorted(self.bugs))

    def __len__(self) -> int:
        return len(self.bugs)

    def get(self, bug_id: str) -> Bug | None:
        """The bug with this id, if any."""
        return self.bugs.get(bug_id)

    def ids(self) -> list[str]:
        """Sorted bug ids."""
        return sorted(self.bugs)

    def relevant(
        self, case_name: str | None, case_bugs: Iterable[str] = (), markers: Iterable[str] = ()
    ) -> list[Bug]:
        """Bugs whose evidence a case is: listed in the case, naming it as a reproducer, or
        naming it in their scope."""
        wanted = set(case_bugs)
        marks = tuple(markers)
        return [b for b in self if b.id in wanted or b.in_scope(case_name, marks)]

    def evaluate(
        self,
        result_env: Mapping[str, Any],
        *,
        case_name: str | None = None,
        case_bugs: Iterable[str] = (),
        version: str | None = None,
        markers: Iterable[str] = (),
    ) -> list[Finding]:
        """Evaluate every signature on one item.

        Bugs relevant to the case (see :meth:`relevant`) always get a finding:
        reproduced, not-reproduced or unknown, marked ``reproducer`` (the bug's evidence).
        Any other bug gets one only when its signature matches: a similar signature,
        stored so the dashboard can list it apart, never the bug reproduced.

        :param result_env: :func:`pytest_stedge.bugs.signature.signature_env` of the item.
        """
        version = version if version is not None else result_env.get("version")
        relevant = {b.id for b in self.relevant(case_name, case_bugs, markers)}
        findings = []
        for bug in self:
            if not bug.observable_on(result_env.get("stage")):
                continue
            match = bug.matches(result_env)
            if bug.id not in relevant and match is not True:
                continue
            status = {True: "reproduced", False: "not-reproduced", None: "unknown"}[match]
            evidence: dict[str, Any] = {
                "signature": bug.signature.text,
                "values": bug.signature.evidence(result_env),
                "reproducer": bug.id in relevant,
            }
            if version:
                evidence["version"] = str(version)
                evidence["affects"] = bug.affects(str(version))
            findings.append(Finding(bug.id, status, evidence))
        return findings


def load_registry(folder: Path | str) -> BugRegistry:
    """Load every ``*.toml`` in ``folder`` (a missing folder is an empty registry).

    :raises CaseError: naming the file and the key, for any malformed entry.
    """
    folder = Path(folder)
    registry = BugRegistry(folder=folder)
    if not folder.is_dir():
        return registry
    for path in sorted(folder.glob("*.toml")):
        bug = load_bug(path)
        registry.bugs[bug.id] = bug
    return registry


def load_bug(path: Path) -> Bug:
    """Read and validate one bug file.

    :raises CaseError: naming the file, the key and what is accepted.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(path, None, f"not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CaseError(path, None, f"not UTF-8 text: {exc}") from None
    for key in REQUIRED:
        if key not in raw:
            raise CaseError(path, key, f"missing; a bug file needs {', '.join(REQUIRED)}")
    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise CaseError(
            path,
            unknown[0],
            f"unknown key; accepted: {', '.join(REQUIRED + OPTIONAL)}",
        )

    def text(key: str) -> str:
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise CaseError(path, key, f"expected a string, got {value!r}")
        return value

    bug_id = text("id")
    if not _ID_RE.match(bug_id):
        raise CaseError(path, "id", f"{bug_id!r}: expected lower-case letters, digits, '-', '.'")
    if bug_id != path.stem:
        raise CaseError(path, "id", f"{bug_id!r} differs from the file name {path.stem!r}")
    for key in ("title", "source"):
        if not text(key).strip():
            raise CaseError(path, key, "must not be empty")
    status = text("status")
    if status not in STATUSES:
        raise CaseError(path, "status", f"{status!r}; accepted: {', '.join(STATUSES)}")
    affected_text = text("affected").strip()
    affected = None
    if affected_text != "unknown":
        try:
            affected = SpecifierSet(affected_text)
        except InvalidSpecifier:
            raise CaseError(
                path,
                "affected",
                f"{affected_text!r} is not a PEP 440 specifier set (e.g. '<2.2', "
                "'==4.0.1', '>=2.1,<2.2', '==2.1.*') or 'unknown'",
            ) from None
        if not str(affected):
            raise CaseError(path, "affected", "empty; write 'unknown' when nobody knows")
    fixed_in = None
    if "fixed_in" in raw:
        fixed_text = text("fixed_in")
        try:
            fixed_in = Version(fixed_text)
        except InvalidVersion:
            raise CaseError(
                path, "fixed_in", f"{fixed_text!r} is not a version such as '2.2.0'"
            ) from None
        if affected is not None and affected.contains(fixed_in, prereleases=True):
            raise CaseError(path, "fixed_in", f"{fixed_text} is inside affected {affected_text!r}")
    if status == "fixed" and fixed_in is None:
        raise CaseError(path, "fixed_in", "status 'fixed' needs the first fixed version")
    reproducers = raw["reproducers"]
    if (
        not isinstance(reproducers, list)
        or not reproducers
        or not all(isinstance(r, str) and r for r in reproducers)
    ):
        raise CaseError(
            path,
            "reproducers",
            f"expected a non-empty list of corpus case names, got {reproducers!r}",
        )
    try:
        signature = parse_signature(text("signature"))
    except SignatureError as exc:
        raise CaseError(path, "signature", str(exc)) from None
    stages = raw.get("stages", [])
    from ..case.model import ALL_STAGES

    if not isinstance(stages, list) or not all(s in ALL_STAGES for s in stages):
        raise CaseError(
            path, "stages", f"expected a list drawn from {', '.join(ALL_STAGES)}, got {stages!r}"
        )
    kind = text("kind") or "bug"
    if kind not in KINDS:
        raise CaseError(path, "kind", f"{kind!r}; accepted: {', '.join(KINDS)}")
    scope_cases, scope_markers = _scope(path, raw.get("scope", {}))
    return Bug(
        scope_cases=scope_cases,
        scope_markers=scope_markers,
        kind=kind,
        links=_links(path, raw.get("links", [])),
        stages=tuple(stages),
        id=bug_id,
        title=text("title"),
        source=text("source"),
        affected=affected,
        status=status,
        reproducers=tuple(reproducers),
        signature=signature,
        path=path,
        fixed_in=fixed_in,
        notes=text("notes"),
    )


def _scope(path: Path, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``scope = { cases = [patterns], markers = [names] }``: where findings are evidence."""
    if not isinstance(raw, dict) or set(raw) - {"cases", "markers"}:
        raise CaseError(path, "scope", "expected a table { cases = [case-name patterns], "
                        "markers = [case markers] }")
    out = []
    for key in ("cases", "markers"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise CaseError(path, f"scope.{key}", f"expected a list of non-empty strings, got {value!r}")
        out.append(tuple(v.strip() for v in value))
    return out[0], out[1]


def _links(path: Path, raw: Any) -> tuple[tuple[str, str], ...]:
    """``links = [{title, url}]``: public sources, every url an http(s) address."""
    if not isinstance(raw, list):
        raise CaseError(path, "links", "expected a list of { title = ..., url = ... } tables")
    out = []
    for index, link in enumerate(raw):
        key = f"links[{index}]"
        if not isinstance(link, dict) or set(link) - {"title", "url"}:
            raise CaseError(path, key, "expected a table with title and url")
        title, url = link.get("title"), link.get("url")
        if not isinstance(title, str) or not title.strip():
            raise CaseError(path, f"{key}.title", "expected the source's title")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s<>\"']+$", url):
            raise CaseError(path, f"{key}.url", f"expected an http(s) URL without spaces, got {url!r}")
        out.append((title.strip(), url))
    return tuple(out)


def check_case_bugs(
    case_bug_ids: Iterable[str], registry: BugRegistry, case_path: Path | str
) -> None:
    """Refuse a case that lists a bug the registry does not have.

    :raises CaseError: naming the case file, the ``bugs`` key and the known ids.
    """
    for bug_id in case_bug_ids:
        if bug_id not in registry:
            where = f" in {registry.folder}" if registry.folder else ""
            raise CaseError(
                case_path,
                "bugs",
                f"unknown bug {bug_id!r}: no {bug_id}.toml{where}; known bugs: "
                f"{', '.join(registry.ids()) or 'none'}",
            )


def missing_reproducers(registry: BugRegistry, case_names: Iterable[str]) -> list[tuple[str, str]]:
    """(bug id, case name) for every reproducer the corpus does not have."""
    names = set(case_names)
    return [(b.id, r) for b in registry for r in b.reproducers if r not in names]
