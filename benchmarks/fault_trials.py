"""Fault trials (issue 14): kill, SIGTERM and SIGINT a running `pytest corpus` at random
moments, and fill its disk; after each, check what a user relies on.

The fake stedgeai sleeps a random time per case (and starts helpers that call setsid and
double-fork away, `spawn`, and one that also clears its environment, `spawn_clean`). After
each trial:
- every item pytest reported finished (-v lines) is in the store: counted once as found
  directly in the DuckDB file (read-only open), and once after a writer open merged the
  journal the stopped session left (what the next session does);
- the store opens;
- no tool process is left (the fake tool and its helpers, looked up in /proc);
- for SIGTERM and SIGINT: the run is marked interrupted and the summary was printed.
- a stop is stuck when the session has not ended 120 s after the signal (it is killed);
  a stop the session's own watchdog ended (ini stedge_stop_timeout: every stack printed,
  exit 1) is counted apart.
The full-disk trial runs the session on a small tmpfs (skipped, with the reason, where
mounting is not allowed): the session must end with its summary and a clear message, and
every finished item must be in the store or its journal, merged once space is back.
The readers trial runs 8 sessions on one DuckDB file while `stedge runs` and `stedge
dashboard` read it in a loop: reads refused (after their 5 s wait), the slowest read, and
every session's finished items in the store.

    python benchmarks/fault_trials.py [--trials 20] [--cases 8] [--seed 1] [--xdist]
                                      [--only kill|term|int|disk|readers]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT))

from conftest import make_conv_model
from fake_stedgeai import make_install
from fault_readers import finished_items

from pytest_stedge.store.database import Store
from pytest_stedge.store.journal import journal_dir, merge_stopped

HELPER_MARK = "fake-stedgeai-helper"
CASE = """\
model = "m{index}.onnx"
target = "stm32n6"
stages = ["generate"]
[neural_art]
profile = "default"
[expect]
activations_bytes = {{ min = 1 }}
"""


@dataclass
class Tally:
    """Counts over the trials of one kind."""

    trials: int = 0
    all_in_store: int = 0  # every reported item found directly in the DuckDB file
    all_after_merge: int = 0  # ... once the journal is merged
    store_opens: int = 0
    no_tool_left: int = 0
    interrupted_runs: int = 0  # the signal landed while a run was recorded
    marked_interrupted: int = 0
    summary_printed: int = 0
    finished_items: int = 0
    lost_items: int = 0  # finished items in neither the store nor a journal
    processes_left: int = 0  # tool processes alive 15 s after the session ended
    stuck_stops: int = 0  # sessions alive 120 s after the signal (killed)
    watchdog_stops: int = 0  # stops the session's watchdog ended (stacks printed, exit 1)
    missing: list[str] = field(default_factory=list)


def build(root: Path, cases: int) -> tuple[Path, Path]:
    installs = root / "installs"
    make_install(installs / "4.0", "4.0.1")
    corpus = root / "corpus"
    for i in range(cases):
        folder = corpus / f"case{i:02d}"
        folder.mkdir(parents=True)
        make_conv_model(folder / f"m{i}.onnx", channels=4 + i % 8, size=8 + i % 5)
        (folder / "case.toml").write_text(CASE.format(index=i))
    return installs, corpus


def faults(rng: random.Random, cases: int) -> str:
    return json.dumps({f"m{i}": {"sleep": round(rng.uniform(0.05, 0.8), 3), "spawn": 120,
                              "spawn_clean": 120} for i in range(cases)})


def live(marks: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and any(m.encode() in cmdline for m in marks):
            found.append(int(entry.name))
    return found


def session(corpus: Path, installs: Path, db: Path, workdir: Path, report: Path,
            fault_json: str, xdist: bool) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "pytest", str(corpus), "-v", "-p", "no:cacheprovider",
            "-p", "no:hypothesispytest", "--stedge-root", str(installs), "--stedge-db", str(db),
            "--stedge-workdir", str(workdir), "--stedge-report", str(report),
            f"--rootdir={corpus.parent}"]
    if xdist:
        argv += ["-n", "2"]
    env = dict(os.environ, STEDGE_FAKE=fault_json)
    return subprocess.Popen(argv, cwd=corpus.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def run_count(db: Path) -> int:
    try:
        with Store.open(db, create=False, read_only=True) as store:
            return len(store.list_runs())
    except Exception:  # noqa: BLE001 - check() reports a store that does not open
        return -1


def check(tally: Tally, db: Path, output: str, marks: list[str], *, interrupted: bool,
          runs_before: int = 0) -> None:
    tally.trials += 1
    finished = finished_items(output)
    tally.finished_items += len(finished)
    deadline = time.monotonic() + 15
    while live(marks) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = live(marks)
    tally.processes_left += len(left)
    if not left:
        tally.no_tool_left += 1
    else:
        for pid in left:  # clean up for the next trial, and count it as a failure
            tally.missing.append(f"process left: {pid} {_cmdline(pid)}")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    try:
        with Store.open(db, create=False, read_only=True) as store:
            stored = {n for r in store.list_runs() for n in store.item_nodeids(r["run_id"])}
            newest = store.list_runs(limit=1)
        tally.store_opens += 1
    except Exception as exc:  # noqa: BLE001 - a trial reports, never stops
        tally.missing.append(f"store did not open: {exc}")
        return
    if finished <= stored:
        tally.all_in_store += 1
    with Store.open(db) as store:
        for line in merge_stopped(store):
            if "not merged" in line:
                tally.missing.append(line)
        merged = {n for r in store.list_runs() for n in store.item_nodeids(r["run_id"])}
        newest = store.list_runs(limit=1)
    if finished <= merged:
        tally.all_after_merge += 1
    else:
        tally.lost_items += len(finished - merged)
        tally.missing += sorted(finished - merged)
    if interrupted and len(store_runs := newest) and run_count(db) > runs_before:
        tally.interrupted_runs += 1
        if store_runs[0]["status"] == "interrupted":
            tally.marked_interrupted += 1
        if "stedge summary" in output:
            tally.summary_printed += 1
        if store_runs[0]["status"] != "interrupted" or "stedge summary" not in output:
            tail = " | ".join(line for line in output.splitlines()[-6:] if line.strip())
            tally.missing.append(f"run {store_runs[0]['run_id']} {store_runs[0]['status']}, "
                                 f"summary {'printed' if 'stedge summary' in output else 'MISSING'}"
                                 f"; output ends: {tail[:600]}")


def _cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                .decode(errors="replace")[:300])
    except OSError:
        return "(gone)"


def signal_trials(kind: str, sig: signal.Signals, args: argparse.Namespace, root: Path,
                  installs: Path, corpus: Path, rng: random.Random) -> Tally:
    tally = Tally()
    db = root / f"{kind}.duckdb"
    marks = [HELPER_MARK, str(installs)]
    low, high = args.window
    reported = 0  # problems printed so far, each under its trial
    for trial in range(args.trials):
        before = run_count(db)
        proc = session(corpus, installs, db, root / "work", root / f"{kind}-report.html",
                       faults(rng, args.cases), args.xdist)
        delay = rng.uniform(low, high)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            output = proc.communicate(timeout=120)[0]
        except subprocess.TimeoutExpired:  # a stuck stop: count it, then end it
            tally.stuck_stops += 1
            proc.kill()
            output = proc.communicate()[0]
        if "Timeout (0:" in output and "most recent call first" in output:
            tally.watchdog_stops += 1
        # a session that ended before the signal is a plain run: still checked
        check(tally, db, output, marks, interrupted=sig != signal.SIGKILL and proc.returncode == 2,
              runs_before=before)
        print(f"  {kind} trial {trial + 1}: signal after {delay:.1f} s, exit {proc.returncode}",
              flush=True)
        for problem in tally.missing[reported:]:
            print(f"    {problem}", flush=True)
        reported = len(tally.missing)
    return tally


def calibrate(root: Path, installs: Path, corpus: Path, args: argparse.Namespace,
              rng: random.Random) -> tuple[float, float]:
    """Time one plain session: when its first item finished and when it ended."""
    start = time.monotonic()
    proc = session(corpus, installs, root / "calibrate.duckdb", root / "work",
                   root / "calibrate.html", faults(rng, args.cases), args.xdist)
    assert proc.stdout is not None
    first = None
    for line in proc.stdout:
        if first is None and finished_items(line):
            first = time.monotonic() - start
    proc.wait()
    end = time.monotonic() - start
    return max(0.3, (first or end / 2) - 2.0), end


def full_disk_trial(args: argparse.Namespace, root: Path, installs: Path, corpus: Path,
                    rng: random.Random) -> Tally | str:
    mount = root / "small-disk"
    mount.mkdir()
    if os.geteuid() != 0:
        return "skipped: mounting a tmpfs needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.disk_mb}m", "tmpfs",
                           str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"skipped: mount -t tmpfs is not allowed here ({done.stderr.strip()})"
    tally = Tally()
    try:
        db = mount / "results.duckdb"
        with Store.open(db):
            pass
        # leave a little room: the tool's outputs fill the rest mid-session
        free = shutil.disk_usage(mount).free
        filler = mount / "filler.bin"
        with open(filler, "wb") as handle:
            handle.truncate(0)
            handle.write(b"\0" * max(0, free - args.room_kb * 1024))
        proc = session(corpus, installs, db, mount / "work", mount / "report.html",
                       faults(rng, args.cases), args.xdist)
        output = proc.communicate(timeout=600)[0]
        clear = "the disk is full" in output or "No space left" in output
        print(f"  full disk: exit {proc.returncode}, summary "
              f"{'printed' if 'stedge summary' in output else 'MISSING'}, "
              f"message {'clear' if clear else 'MISSING'}, INTERNALERROR "
              f"{'yes' if 'INTERNALERROR' in output else 'no'}", flush=True)
        for line in output.splitlines():
            if "NOT STORED" in line or "disk is full" in line:
                print("    " + line[:300])
        filler.unlink()  # space is back: the next open merges the journal
        check(tally, db, output, [HELPER_MARK, str(installs)], interrupted=False)
        tally.summary_printed += "stedge summary" in output and clear
        if journal_dir(db).exists():
            tally.missing.append(f"journal left after the merge: {journal_dir(db)}")
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--disk-mb", type=int, default=24)
    parser.add_argument("--room-kb", type=int, default=900, help="free space left on the tmpfs")
    parser.add_argument("--xdist", action="store_true", help="run the sessions with -n 2")
    parser.add_argument("--only", choices=["kill", "term", "int", "disk", "readers"],
                        action="append")
    parser.add_argument("--writers", type=int, default=8, help="sessions of the readers trial")
    args = parser.parse_args()
    # a background shell starts us with SIGINT ignored, and pytest would inherit that
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = random.Random(args.seed)
    kinds = args.only or ["kill", "term", "int", "disk", "readers"]
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        installs, corpus = build(root, args.cases)
        for kind in ("kill", "term", "int"):
            Store.open(root / f"{kind}.duckdb").close()  # the store exists before any signal
        args.window = calibrate(root, installs, corpus, args, rng)
        print(f"signals land uniformly in {args.window[0]:.1f}-{args.window[1]:.1f} s after "
              "the start (from the first item's end minus 2 s to the session's end, measured "
              "on one plain session)", flush=True)
        for kind, sig in (("kill", signal.SIGKILL), ("term", signal.SIGTERM),
                          ("int", signal.SIGINT)):
            if kind in kinds:
                print(f"{kind}: {args.trials} trials", flush=True)
                results[kind] = signal_trials(kind, sig, args, root, installs, corpus, rng)
                report(kind, results[kind])
        if "disk" in kinds:
            print("full disk:", flush=True)
            results["disk"] = full_disk_trial(args, root, installs, corpus, rng)
            report("disk", results["disk"])
        if "readers" in kinds:
            from fault_readers import readers_trial

            print(f"readers: {args.writers} sessions on one store", flush=True)
            results["readers"] = readers_trial(
                args.writers, lambda db, work: session(
                    corpus, installs, db, work, root / "readers.html", faults(rng, args.cases),
                    args.xdist), root)
            print(results["readers"], flush=True)
    print("\nresults")
    for kind, tally in results.items():
        report(kind, tally)


def report(kind: str, tally: object) -> None:
    """One line of counts for the trials of one kind."""
    if not isinstance(tally, Tally):
        print(f"{kind:>5}: {tally}", flush=True)
        return
    line = (f"{kind:>5}: {tally.trials} trials, {tally.finished_items} finished items; "
            f"all finished items in the store: {tally.all_in_store}/{tally.trials} directly, "
            f"{tally.all_after_merge}/{tally.trials} after the journal merge; store opens "
            f"{tally.store_opens}/{tally.trials}; no tool process left "
            f"{tally.no_tool_left}/{tally.trials}")
    if kind in ("term", "int"):
        line += (f"; of {tally.interrupted_runs} sessions stopped with a recorded run: "
                 f"marked interrupted {tally.marked_interrupted}, summary printed "
                 f"{tally.summary_printed}")
    if kind == "disk":
        line += f"; summary with a clear message {tally.summary_printed}/1"
    line += (f"; items lost {tally.lost_items}; processes left {tally.processes_left}; "
             f"stuck stops {tally.stuck_stops} (ended by the watchdog: "
             f"{tally.watchdog_stops})")
    print(line, flush=True)
    for problem in tally.missing[:10]:
        print(f"       missing: {problem}")


if __name__ == "__main__":
    main()
