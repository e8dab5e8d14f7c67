"""A hostile (or hijacked) model server answering with 20 MB: an error body, a whole reply, a
streamed one. The reply is refused once past the cap (engine/runtime/reply_cap.py), the turn
fails with one line naming the model and the cap, under the agent's retry policy, and the run
ends at once: nothing reads, keeps or scans the 20 MB (the figures: bench_hostile_replies.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.runtime.engine import RunStatus
from tests.models.conftest import RealRun, fields, gemini_model, openai_model
from tests.models.llm_server import ModelServer, Turn

HUGE = 20 * 1024 * 1024
BLOCK = "x" * 65536
CAP = {"error": "an error reply (HTTP 500) larger than 32 KiB, escalate's cap on an error reply",
       "whole": "the reply is larger than 4 MiB, escalate's cap on a model reply",
       "stream": "the reply is larger than 4 MiB, escalate's cap on a model reply"}
# A streamed reply cut at the cap is sometimes reported by the libraries as a connection closed
# mid-reply, without the cap as its cause (seen about once in five runs on a loaded host; not yet
# understood): the run fails all the same, in one line naming the model. The issue-22 note says so.
CUT = "the reply was cut off (the connection closed in the middle of it)"


def said(kind: str, prefix: str, text: str) -> bool:
    return f"{prefix}{CAP[kind]}" in text or (kind == "stream" and f"{prefix}{CUT}" in text)


AGENT = """
retry once = 1 times, fixed backoff
prompt p: \"\"\"You help.\"\"\"
agent main:
    instruction p
    retry once
"""


def huge(kind: str, status: int = 500) -> Turn:
    if kind == "error":
        return Turn(status=status, message="x" * HUGE)
    if kind == "whole":
        return Turn(text="x" * HUGE)
    return Turn(chunks=[BLOCK] * (HUGE // len(BLOCK)))


@pytest.mark.parametrize("kind", ["error", "whole", "stream"])
async def test_a_huge_reply_is_refused_and_retried_by_the_policy(real: RealRun, server: ModelServer, monkeypatch,
                                                                  kind: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", "1" if kind == "stream" else "")
    server.push(huge(kind), huge(kind), Turn(text="never asked"))
    handle = await real.run(openai_model(server) + AGENT)
    assert handle.status is RunStatus.FAILED
    assert "\n" not in handle.error
    assert said(kind, f"model 'main' (openai/gpt-test at {server.url}): ", handle.error), handle.error
    (log,) = [f["message"] for f in fields(handle, "log") if "retry" in f["message"]]
    assert said(kind, "", log) and "retry 1 of 1" in log
    assert len(server.requests) == 2


async def test_a_huge_reply_then_a_good_one(real: RealRun, server: ModelServer) -> None:
    server.push(huge("whole"), Turn(text="a reply of a sane size"))
    handle = await real.run(openai_model(server) + AGENT)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "a reply of a sane size"


async def test_a_huge_error_keeps_its_status(real: RealRun, server: ModelServer) -> None:
    """A 401 is not retried, however large its body: the status still decides."""
    server.push(huge("error", 401), Turn(text="never asked"))
    handle = await real.run(openai_model(server) + AGENT)
    assert handle.status is RunStatus.FAILED
    assert "an error reply (HTTP 401) larger than 32 KiB" in handle.error
    assert len(server.requests) == 1


async def test_a_reply_under_the_cap_is_whole(real: RealRun, server: ModelServer, monkeypatch) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", "1")
    text = "y" * (3 * 1024 * 1024)
    server.push(Turn(chunks=[text[i:i + 65536] for i in range(0, len(text), 65536)]))
    handle = await real.run(openai_model(server) + AGENT)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == text


@pytest.mark.parametrize("kind", ["error", "whole", "stream"])
async def test_gemini_huge_reply(real: RealRun, server: ModelServer, monkeypatch, kind: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", "1" if kind == "stream" else "")
    server.push(huge(kind), huge(kind))
    handle = await real.run(gemini_model(server) + AGENT)
    assert handle.status is RunStatus.FAILED
    assert said(kind, f"model 'main' (gemini/gemini-test at {server.root}): ", handle.error), handle.error


@pytest.mark.parametrize("provider", ["mistral", "openrouter", "hosted_vllm"])
async def test_providers_of_litellms_own_handler(real: RealRun, server: ModelServer, monkeypatch, provider: str) -> None:
    """Providers that LiteLLM answers through its own HTTP handler, not the OpenAI client."""
    monkeypatch.setenv("ESCALATE_STREAM", "1")
    server.push(huge("stream"), huge("stream"))
    model = f'model main:\n    provider: {provider}\n    name: m\n    base_url: "{server.url}"\n'
    handle = await real.run(model + AGENT)
    assert handle.status is RunStatus.FAILED
    assert said("stream", f"model 'main' ({provider}/m at {server.url}): ", handle.error), handle.error


WORKFLOW = """
model main:
    provider: openai
    name: gpt-test
    base_url: "{url}"
prompt p: \"\"\"You help.\"\"\"
agent main:
    instruction p
"""


def start(tmp: Path, url: str, stream: bool) -> subprocess.Popen[str]:
    (tmp / "wf.sr").write_text(WORKFLOW.format(url=url))
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", ESCALATE_STREAM="1" if stream else "",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.Popen([sys.executable, "-m", "engine", "run", "wf.sr"], cwd=tmp, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["error", "whole", "stream"])
def test_escalate_run_ends_with_one_line(tmp_path: Path, kind: str) -> None:
    with ModelServer([huge(kind)]) as server:
        proc = start(tmp_path, server.url, kind == "stream")
        out, err = proc.communicate(timeout=120)  # today's LiteLLM alone scans a 20 MB error for minutes
    assert (proc.returncode, out) == (1, "")
    assert "Traceback" not in err
    (line,) = [ln for ln in err.splitlines() if "cap on" in ln]
    assert said(kind, f"model 'main' (openai/gpt-test at {server.url}): ", line), line


@pytest.mark.slow
@pytest.mark.parametrize("slow_stream", [False, True])
def test_sigterm_while_a_huge_reply_arrives(tmp_path: Path, slow_stream: bool) -> None:
    """SIGTERM once the server has sent (or tried to send) its 20 MB error, or half-way through a
    slow stream: the run ends promptly, its loop free to take the signal."""
    turn = Turn(chunks=[BLOCK] * (HUGE // len(BLOCK)), pause=0.2) if slow_stream else huge("error")
    with ModelServer([turn]) as server:
        proc = start(tmp_path, server.url, slow_stream)
        if slow_stream:
            while not server.requests and proc.poll() is None:
                server.replied.wait(0.1)
            server.replied.wait(2.0)  # ten pieces of a reply that would take minutes
        else:
            while not server.replied.wait(0.1) and proc.poll() is None:
                pass
            time.sleep(3)  # today's code is deep in scanning the body by now, its loop blocked
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    if slow_stream:
        assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err
    else:  # the run may have failed on the cap before the signal came (even reached its last
        # instructions: the default action then ends it, -SIGTERM, once it has said why it failed)
        assert proc.returncode in (1, 128 + signal.SIGTERM) or (
            proc.returncode == -signal.SIGTERM and "escalate's cap on an error reply" in err), err
