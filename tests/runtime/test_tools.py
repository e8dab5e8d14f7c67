"""Built-in tools called directly: confinement, errors as results, time limits."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from engine.flow.guardrails import UnknownGuardrail, mask
from engine.runtime.tools.cli import cli_functions
from engine.runtime.tools.fs import fs_functions
from engine.runtime.tools.registry import ToolUnavailable, builtin_functions
from engine.runtime.tools.web import web_functions
from engine.runtime.tools.workspace import PathRefused, Workspace


def tools(root: Path, readonly: bool = False) -> dict:
    return {f.__name__: f for f in fs_functions(Workspace(root), readonly=readonly)}


async def test_fs_round_trip(tmp_path: Path) -> None:
    fs = tools(tmp_path)
    assert (await fs["write_file"]("a/b.txt", "hi")) == {"path": "a/b.txt", "written": 2}
    assert (await fs["read_file"]("a/b.txt"))["content"] == "hi"
    assert (await fs["list_directory"]("."))["entries"] == ["a/"]
    assert (await fs["delete_file"]("a/b.txt"))["deleted"] is True
    assert "error" in await fs["read_file"]("a/b.txt")


@pytest.mark.parametrize("path", ["../x.txt", "a/../../x.txt", "/etc/passwd", "link/secret.txt"])
async def test_fs_refuses_paths_leaving_the_workspace(tmp_path: Path, path: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "x.txt").write_text("outside")
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path, root / "link")
    fs = tools(root)
    for call in (fs["read_file"](path), fs["write_file"](path, "x"), fs["delete_file"](path)):
        result = await call
        assert "outside the workspace" in result["error"]
    assert (tmp_path / "x.txt").read_text() == "outside"


def test_inside_dotdot_is_fine(tmp_path: Path) -> None:
    assert Workspace(tmp_path).resolve("a/../b.txt") == tmp_path.resolve() / "b.txt"
    with pytest.raises(PathRefused):
        Workspace(tmp_path).resolve("bad\x00name")


def test_readonly_has_no_writers(tmp_path: Path) -> None:
    assert sorted(tools(tmp_path, readonly=True)) == ["list_directory", "read_file"]
    assert [f.__name__ for f in builtin_functions("fs_readonly", Workspace(tmp_path))] == ["read_file", "list_directory"]
    with pytest.raises(ToolUnavailable, match="unknown builtin"):
        builtin_functions("streetrace.nope", Workspace(tmp_path))


async def test_run_command_in_workspace_with_time_limit(tmp_path: Path) -> None:
    [run_command] = cli_functions(Workspace(tmp_path), time_limit=0.5)
    result = await run_command("pwd; echo err >&2; exit 3")
    assert result["exit_code"] == 3 and result["stdout"].strip() == str(tmp_path.resolve()) and result["stderr"] == "err\n"
    slow = await run_command("sleep 5")
    assert "timed out" in slow["error"]


@pytest.mark.parametrize("cancel", [True, False])
async def test_a_stopped_command_takes_the_commands_it_started_along(tmp_path: Path, cancel: bool) -> None:
    """Cancelled (the run was cancelled, the console quit) or out of time, the command ends at
    once with every process it started: one still holding the output would keep the run going."""
    import asyncio
    import subprocess
    import time

    # a child of the shell, not the shell itself; its own per test (the two cases may run at once
    # on two test processes, and pgrep would see the other's), long enough that a command waiting
    # for it could never end within the hang guard below
    marker = f"sleep 300.{os.getpid()}{int(cancel)}"
    [run_command] = cli_functions(Workspace(tmp_path), time_limit=60 if cancel else 0.5)
    started = time.monotonic()
    call = asyncio.ensure_future(run_command(f"{marker}; echo done"))
    if cancel:
        await asyncio.sleep(0.5)
        call.cancel()
    with pytest.raises(asyncio.CancelledError) if cancel else contextlib.nullcontext():
        result = await call
        assert "timed out" in result["error"]
    assert time.monotonic() - started < 120  # a hang guard: waiting for the child would take 300 s
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1  # none left


async def test_fetch_url_refuses_other_schemes() -> None:
    [fetch_url] = web_functions()
    assert "only http and https" in (await fetch_url("file:///etc/passwd"))["error"]


def test_masks() -> None:
    text = "mail bob@example.com, call +1 (555) 123-4567, card 4111 1111 1111 1111, key sk-abcdefghijklmnop1234"
    masked = mask("pii", text)
    assert "bob@" not in masked and "555" not in masked and "4111" not in masked
    assert "[MASKED_EMAIL]" in masked and "[MASKED_PHONE]" in masked and "[MASKED_CREDIT_CARD]" in masked
    assert "[MASKED_SECRETS]" in mask("secrets", text)
    assert mask("pii", "3 apples in 2024") == "3 apples in 2024"
    with pytest.raises(UnknownGuardrail):
        mask("nope", "x")


async def test_history_truncate_and_trigger() -> None:
    from types import SimpleNamespace

    from engine.runtime.history import compact
    from engine.flow.spec import PolicySpec

    run = SimpleNamespace(context=None)
    messages = [{"role": "user", "content": str(i)} for i in range(6)]
    keep = PolicySpec("p", {"trigger": {"op": ">", "left": "message_count", "right": 3}, "strategy": "truncate",
                            "preserve": ["first", {"last_messages": 2}]})
    assert [m["content"] for m in await compact(run, keep, messages)] == ["0", "4", "5"]
    quiet = PolicySpec("p", {"trigger": {"op": ">", "left": "token_count", "right": 1000}, "strategy": "truncate"})
    assert await compact(run, quiet, messages) == messages
    unreadable = PolicySpec("p", {"trigger": {"op": ">", "left": "mood", "right": 1}, "strategy": "truncate"})
    assert await compact(run, unreadable, messages) == messages


def test_model_resolution(monkeypatch) -> None:
    from engine.runtime.models import ModelUnavailable, model_spec, real_model
    from engine.flow.spec import ModelSpec, WorkflowBase

    class W(WorkflowBase):
        MODELS = {"main": ModelSpec("main", "gemini", "gemini-2.5-flash")}

    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    from google.adk.models import Gemini

    assert isinstance(real_model(model_spec(W(), "main")), Gemini)  # built, nothing sent
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ModelUnavailable, match="GOOGLE_API_KEY or GEMINI_API_KEY.*--script"):
        real_model(model_spec(W(), "main"))
    # A `using model "provider/id"` literal is read as a model too.
    spec = model_spec(W(), "openai/gpt-4o")
    assert (spec.provider, spec.model_id) == ("openai", "gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    try:
        import litellm  # noqa: F401
    except ImportError:
        with pytest.raises(ModelUnavailable, match="LiteLLM"):
            real_model(spec)


def test_a_scripted_run_leaves_mcp_servers_unconnected_and_says_so(capsys, tmp_path: Path) -> None:
    """Real-world files declare MCP servers; offline, the scripted agents run without them."""
    from tests.runtime.conftest import run_sr

    source = '''tool gh = mcp "https://api.example.com/mcp/" with auth bearer "x"
tool fs = builtin streetrace.fs
prompt p: """Review."""
agent reviewer:
    instruction p
    tools gh, fs
flow main:
    $r = run agent reviewer "go"
    return $r
'''
    script = ('agents:\n  reviewer:\n    - {tool: list_issues, args: {repo: x}}\n'
              '    - {text: "no github here", when: "no tool with that name"}\n    - "fallback"\n')
    code, out, events = run_sr(capsys, tmp_path, source, script)
    assert (code, out) == (0, "no github here\n")
    assert any("'gh'" in e.get("message", "") and "not connected" in e["message"] for e in events if e["type"] == "log")
