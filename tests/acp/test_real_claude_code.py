"""A real ACP agent we did not write, offline: Claude Code through `@zed-industries/claude-code-acp`
(npm, 0.16.2: its `@anthropic-ai/claude-agent-sdk` bundles Claude Code's cli.js), against a
scripted Anthropic API on 127.0.0.1 (fake_anthropic.py). The model asks for its Bash tool; the
adapter asks escalate's permission over ACP; the person answers from the shell (`escalate
answer --approve`); the command then runs through escalate's terminal capability, in the
workspace.

The package is pinned in tests/acp/package.json and installed by .ci/run (`npm ci --prefix
tests/acp`); nothing here downloads it. CLAUDE_CODE_ACP may name another install.
As root, the agent runs as another user (Claude Code refuses root with its permission modes).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import sys
import time
from pathlib import Path


from tests.acp.test_acp_cli import _pending
from tests.unprivileged import as_other_user
from tests.npm_packages import installed

AGENT = os.environ.get("CLAUDE_CODE_ACP") or str(Path(__file__).with_name("node_modules") / ".bin" / "claude-code-acp")


def setup_module() -> None:
    if "CLAUDE_CODE_ACP" not in os.environ:
        installed(Path(__file__).parent, "claude-code-acp")


def test_claude_code_asks_through_acp_and_the_shell_answers() -> None:
    tmp_path = Path(tempfile.mkdtemp(prefix="escalate-claude-acp-"))  # under /tmp: the agent's user can reach it
    os.chmod(tmp_path, 0o755)
    home, workspace = tmp_path / "home", tmp_path / "ws"
    for folder in (home, workspace):
        folder.mkdir()
        os.chmod(folder, 0o777)  # the agent's user writes here
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fake_anthropic.py")),
                               str(tmp_path / "port"), str(tmp_path / "api.jsonl")])
    try:
        while not (tmp_path / "port").exists():
            time.sleep(0.05)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HOME": str(home),
               "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{(tmp_path / 'port').read_text()}",
               "ANTHROPIC_API_KEY": "sk-offline", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        prefix = as_other_user() if os.geteuid() == 0 else []
        command = shlex.join([*prefix, AGENT])
        db = f"sqlite:///{tmp_path / 'e.db'}"
        run = subprocess.Popen([sys.executable, "-m", "engine", "run", "--agent", command, "--input", "write the marker",
                                "--wait", "--db", db, "--task", "claude"], cwd=workspace, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1)
            if run.poll() is not None:
                raise AssertionError(run.communicate()[1])
            pending = _pending(tmp_path, db)
            assert "echo escalated > approved.txt" in pending["question"]
            answered = subprocess.run([sys.executable, "-m", "engine", "answer", pending["id"], "--approve", "--db", db],
                                      env=env, capture_output=True, text=True, timeout=120)
            assert answered.returncode == 0, answered.stderr
            out, err = run.communicate(timeout=240)
        finally:
            run.kill()
        assert run.returncode == 0, err
        assert "Exited with code 0" in out
        assert (workspace / "approved.txt").read_text() == "escalated\n"
        # escalate's terminal ran it (the agent's user is another one when the suite runs as root)
        assert (workspace / "approved.txt").stat().st_uid == os.geteuid()
    finally:
        server.kill()
        shutil.rmtree(tmp_path, ignore_errors=True)
