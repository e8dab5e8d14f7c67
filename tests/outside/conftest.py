"""Fixtures for outside agents: the real Claude Code CLI (tests/outside/node_modules, installed by
.ci/run with `npm ci`), a scripted Anthropic API, a project with the hook installed the way the
README says, and the shell's view of the database (`escalate answer`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from anthropic_server import ScriptedModel  # noqa: E402
from tests.cli_here import escalate_here
from tests.npm_packages import installed

CLAUDE = HERE / "node_modules" / ".bin" / "claude"
WAIT = 120.0  # seconds any one step may take on a loaded machine (never an assertion on time)


def project_env() -> dict[str, str]:
    """The environment of a process in the project: its database is the project's default one
    (tests/conftest.py points ESCALATE_DB elsewhere for the rest of the suite)."""
    return {k: v for k, v in os.environ.items() if k != "ESCALATE_DB"}


def escalate(*argv: str, cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None,
             timeout: float = WAIT) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, input=stdin, capture_output=True,
                          timeout=timeout, env=env if env is not None else project_env())


@dataclass
class Project:
    root: Path
    home: Path

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / '.escalate' / 'escalate.db'}"

    def rules(self, text: str) -> None:
        (self.root / ".escalate").mkdir(exist_ok=True)
        (self.root / ".escalate" / "rules.yaml").write_text(text)

    def install(self) -> str:
        done = escalate("hook", "install", "claude", "--project", str(self.root), cwd=self.root)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    def answer(self, esc_id: str, *flags: str) -> subprocess.CompletedProcess[bytes]:
        """`escalate answer` as the shell gives it, run in this process (tests/cli_here.py): the
        agent and its hook are what is tested, each a process of its own."""
        done = escalate_here("answer", esc_id, *flags, "--db", self.db_url, cwd=self.root)
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.encode(), done.stderr.encode())

    def rows(self) -> list[dict[str, Any]]:
        """Every escalation in the project's database, as `escalate` stores them."""
        from engine.services import open_database

        path = self.root / ".escalate" / "escalate.db"
        if not path.exists():
            return []
        db = open_database(self.db_url, existing=True)
        try:
            return db.pending_escalations() + db.past_escalations()
        finally:
            db.close()

    def wait_pending(self, count: int = 1) -> list[dict[str, Any]]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            pending = [r for r in self.rows() if r["status"] == "pending"]
            if len(pending) >= count:
                return pending
            time.sleep(0.2)
        raise AssertionError(f"no {count} pending escalation(s) within {WAIT:g} s")

    def wait_status(self, esc_id: str, status: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            row = next((r for r in self.rows() if r["id"] == esc_id), None)
            if row is not None and row["status"] == status:
                return row
            time.sleep(0.2)
        raise AssertionError(f"{esc_id} did not become {status} within {WAIT:g} s")


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache folder of each test's processes (the rules' snapshot outside a project's
    `.escalate/`: rules/snapshot.py), never the real home's."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "shop"
    home = tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return Project(root, home)


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    scripted = ScriptedModel().start()
    yield scripted
    scripted.stop()


def claude_env(project: Project, model: ScriptedModel) -> dict[str, str]:
    env = {k: v for k, v in project_env().items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(HOME=str(project.home), ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-ant-test",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_ERROR_REPORTING="1")
    return env


def start_claude(project: Project, model: ScriptedModel, prompt: str = "make the marker") -> subprocess.Popen[bytes]:
    installed(HERE, "claude")
    return subprocess.Popen([str(CLAUDE), "-p", prompt, "--output-format", "json"], cwd=project.root,
                            env=claude_env(project, model), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(claude: subprocess.Popen[bytes]) -> dict[str, Any]:
    out, err = claude.communicate(timeout=WAIT)
    assert claude.returncode == 0, err.decode()[-2000:]
    return json.loads(out)
