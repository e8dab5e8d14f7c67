"""Real `escalate worker` processes and the runs they share, for the worker tests and benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore, pending_from_json, who
from engine.kernel.model import Decision, ResolvedBy, Response, ResponseType, escalation_digest

DATA = Path(__file__).parent / "data"
ASK = DATA / "ask.sr"
ASK_SCRIPT = DATA / "ask.yaml"


def escalate(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, env=env or os.environ.copy(),
                          capture_output=True, text=True, timeout=timeout)


class WorkerProcess:
    """`escalate worker --db URL --concurrency N` with its stderr in a file."""

    def __init__(self, db_url: str, cwd: Path, *, concurrency: int = 2, name: str = "worker",
                 env: dict[str, str] | None = None) -> None:
        self.log = cwd / f"{name}.err"
        self._err = self.log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "worker", "--db", db_url, "--concurrency", str(concurrency)],
            cwd=cwd, env=env or os.environ.copy(), stdout=subprocess.DEVNULL, stderr=self._err)

    @property
    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    @property
    def owner(self) -> str:
        first = self.text.split("\n", 1)[0]  # "worker OWNER: taking up to ..."
        return first.split(" ", 2)[1].rstrip(":")

    def wait_ready(self, timeout: float = 90.0) -> "WorkerProcess":
        end = time.monotonic() + timeout
        while "taking up to" not in self.text:
            if self.proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"the worker did not start: {self.text[-2000:]}")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        finally:
            self._err.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._err.close()


def answer_for(row: dict[str, Any]) -> Response:
    """The answer a script gives: each names its own run, so a decision that reached another
    run's agent would show in that run's result."""
    pending = pending_from_json(row["payload"])
    esc = pending.escalation
    if esc.options:
        return Response(ResponseType.OPTION, selected_option="keep" if int(esc.run_id[1:], 16) % 2 else "drop")
    return Response(ResponseType.TEXT, text_response=f"ship {esc.run_id}")


def expected_result(run_id: str) -> str:
    return f"built | ship {run_id}"


def answer_args(row: dict[str, Any]) -> list[str]:
    """`escalate answer` arguments for `answer_for(row)`."""
    response = answer_for(row)
    if response.response_type is ResponseType.OPTION:
        return ["answer", row["id"], "--option", str(response.selected_option)]
    return ["answer", row["id"], "--text", str(response.text_response)]


def answer_directly(db: Database, row: dict[str, Any]) -> bool:
    """The same conditional update `escalate answer` makes, without starting a process."""
    decision = Decision(row["id"], answer_for(row), ResolvedBy.HUMAN, time.time(), decided_by=who("test script"),
                        digest=escalation_digest(pending_from_json(row["payload"])))
    return DecisionStore(db).decide(decision) is decision


@dataclass
class Audit:
    runs: int = 0
    done: int = 0
    lost: int = 0  # runs not done, or escalations never decided
    doubled: int = 0  # an escalation decided twice (two decision events), or a recorded step run again
    misrouted: int = 0  # a run whose result is not the one its own answers give
    escalations: int = 0


def audit(db: Database, steps_log: Path | None = None) -> Audit:
    report = Audit()
    for run in db.list_runs(include_finished=True):
        report.runs += 1
        rows = db.escalations_of(run["run_id"])
        report.escalations += len(rows)
        report.lost += sum(1 for r in rows if r["status"] != "decided")
        if run["status"] != "done":
            report.lost += 1
            continue
        report.done += 1
        if json.loads(run["result"]) != expected_result(run["run_id"]):
            report.misrouted += 1
        decided: dict[str, int] = {}
        for event in db.events_of(run["run_id"]):
            if event["type"] == "decision":
                decided[event["id"]] = decided.get(event["id"], 0) + 1
                wanted = answer_for(next(r for r in rows if r["id"] == event["id"]))
                if (event["selectedOption"], event["textResponse"]) != (wanted.selected_option, wanted.text_response):
                    report.misrouted += 1
        report.doubled += sum(n - 1 for n in decided.values() if n > 1)
    if steps_log is not None and steps_log.exists():
        recorded: set[str] = set()
        for line in steps_log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry["kind"] == "recorded":
                recorded.add(entry["key"])
            elif entry["key"] in recorded:
                report.doubled += 1
    return report
