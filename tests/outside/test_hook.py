"""`escalate hook claude` as a process, fed the JSON Claude Code sends (fields checked against a
real run: tests/outside/test_claude_code.py): hostile input, the same request asked twice, a
hook killed with SIGTERM or SIGKILL, and what it imports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import WAIT, Project, escalate, project_env

ASK = """escalationRules:
  global:
    - pattern: "touch"
      action: ask_user
      timeout: 600
"""


def call(project: Project, tool_input: dict | None = None, *, event: str = "PreToolUse", tool_use_id: str = "toolu_1",
         session: str = "s-1") -> bytes:
    data = {"session_id": session, "transcript_path": str(project.home / "t.jsonl"), "cwd": str(project.root),
            "prompt_id": "p", "permission_mode": "default", "effort": {"level": "high"}, "hook_event_name": event,
            "tool_name": "Bash", "tool_input": tool_input or {"command": "touch marker", "description": "d"}}
    if event == "PreToolUse":
        data["tool_use_id"] = tool_use_id
    return json.dumps(data).encode()


def hook(project: Project, stdin: bytes, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return escalate("hook", "claude", *extra, cwd=project.root, stdin=stdin)


def start_hook(project: Project, stdin: bytes) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "hook", "claude"], cwd=project.root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=project_env())
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def outputs(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """(stdout, stderr) of a hook started with `start_hook`, once it ends (its stdin is closed)."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=WAIT)
    return out, err


def wait_owner(project: Project, run_id: str, pid: int) -> None:
    """Until the session's run row is owned by process `pid` (it has begun waiting)."""
    from engine.services import open_database

    db = open_database(project.db_url, existing=True)
    try:
        deadline = time.monotonic() + WAIT
        while f"-{pid}-" not in (db.get_run(run_id) or {}).get("owner", ""):
            assert time.monotonic() < deadline, f"process {pid} never waited on {run_id}"
            time.sleep(0.1)
    finally:
        db.close()


def decision(out: bytes) -> dict:
    return json.loads(out)["hookSpecificOutput"]


# -- hostile input --------------------------------------------------------------------------------


@pytest.mark.parametrize("stdin, says", [
    (b"{not json", b"not JSON"),
    (b"[1, 2]", b"not a JSON object"),
    (b"\xff\xfe{}", b"not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, b"nested too deeply"),
    (json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/", "tool_name": "Bash",
                 "tool_input": "rm -rf /", "tool_use_id": "t"}).encode(), b"tool_input is not a JSON object"),
    (json.dumps({"hook_event_name": "PreToolUse", "session_id": 7}).encode(), b"session_id is not a text"),
    (json.dumps({"hook_event_name": "Stop", "session_id": "s"}).encode(), b"is not one of"),
    (b"", b"not JSON"),
], ids=["not-json", "array", "not-utf8", "deep", "tool-input-text", "session-number", "other-event", "empty"])
def test_bad_input_is_one_line_a_non_blocking_error_and_never_an_approval(project: Project, stdin: bytes,
                                                                           says: bytes) -> None:
    done = hook(project, stdin)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.count(b"\n") == 1 and says in done.stderr and b"Traceback" not in done.stderr


def test_enormous_input_is_refused_unread(project: Project) -> None:
    huge = call(project, {"command": "touch marker", "pad": "x" * (33 * 1024 * 1024)})
    done = hook(project, huge)
    assert done.returncode == 1 and done.stdout == b"" and b"larger than 32 MB" in done.stderr


def test_control_characters_and_osc_in_the_input_are_kept_as_data_never_obeyed(project: Project) -> None:
    project.rules(ASK.replace("ask_user", "deny"))
    nasty = {"command": "touch marker\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J\r\x00", "description": "\x9b31m"}
    done = hook(project, call(project, nasty))
    assert done.returncode == 0 and decision(done.stdout)["permissionDecision"] == "deny"
    project.rules(ASK.replace("timeout: 600", "timeout: 1"))
    done = hook(project, call(project, nasty, tool_use_id="toolu_2"))
    assert decision(done.stdout)["permissionDecision"] == "deny"  # nobody answered: fail closed
    [row] = project.rows()
    assert row["payload"]["extra"]["args"] == nasty  # the full input, as it came
    listed = escalate("runs", "--all", "--db", project.db_url, cwd=project.root)
    assert b"\x1b" not in listed.stdout and b"\x07" not in listed.stdout


def test_no_usable_database_is_one_line_and_no_decision(project: Project, tmp_path: Path) -> None:
    project.rules(ASK)
    (tmp_path / "file").write_text("")
    done = hook(project, call(project), "--db", f"sqlite:///{tmp_path / 'file' / 'x.db'}")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.count(b"\n") == 1 and b"no decision" in done.stderr and b"Traceback" not in done.stderr
    done = hook(project, call(project), "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert done.returncode == 1 and done.stdout == b"" and done.stderr.count(b"\n") == 1


def test_a_bad_rules_file_is_one_line_and_no_decision(project: Project) -> None:
    project.rules("escalationRules:\n  global:\n    - pattern: [\n")
    done = hook(project, call(project))
    assert done.returncode == 1 and done.stdout == b"" and b"rules.yaml:" in done.stderr


# -- one request, asked again; its asker gone ------------------------------------------------------


def test_the_same_tool_use_id_continues_the_same_escalation(project: Project) -> None:
    project.rules(ASK)
    first = start_hook(project, call(project))
    [row] = project.wait_pending()
    second = start_hook(project, call(project))  # asked again while the first still waits
    wait_owner(project, row["run_id"], second.pid)  # the second waits too (and beats the session)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert project.answer(row["id"], "--approve").returncode == 0
    out, err = outputs(second)
    assert decision(out)["permissionDecision"] == "allow", err
    assert [r["id"] for r in project.rows()] == [row["id"]]
    again = hook(project, call(project))  # once decided, asked again: the same decision, at once
    assert decision(again.stdout)["permissionDecision"] == "allow"
    assert len(project.rows()) == 1


def test_sigterm_withdraws_and_a_new_call_raises_a_new_escalation(project: Project) -> None:
    project.rules(ASK)
    proc = start_hook(project, call(project))
    [row] = project.wait_pending()
    proc.send_signal(signal.SIGTERM)
    _, err = outputs(proc)
    assert proc.returncode == 1 and b"withdrawn" in err
    assert project.wait_status(row["id"], "withdrawn")
    again = start_hook(project, call(project))
    pending = project.wait_pending()
    assert [p["id"] for p in pending] == [row["id"] + ".2"]  # never the withdrawn one decided into nothing
    again.kill()
    again.wait()


def test_sigkill_the_next_caller_withdraws_what_the_dead_hook_asked(project: Project) -> None:
    from engine.durable.askers import withdraw_gone
    from engine.services import open_database

    project.rules(ASK)
    proc = start_hook(project, call(project))
    [row] = project.wait_pending()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    db = open_database(project.db_url, existing=True)
    try:
        deadline = time.monotonic() + WAIT
        while row["id"] not in withdraw_gone(db):  # its pid is gone: once its last beat is old enough
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert db.get_run(row["run_id"])["status"] == "aborted"
    finally:
        db.close()
    assert project.wait_status(row["id"], "withdrawn")


def test_a_console_or_worker_never_resumes_a_claude_session(project: Project) -> None:
    """DurableHost.resume, which consoles and workers call on interrupted runs, leaves an outside
    session alone and withdraws what its dead hook asked."""
    import asyncio

    from engine.services import open_services

    project.rules(ASK)
    proc = start_hook(project, call(project))
    [row] = project.wait_pending()
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    async def resume() -> bool:
        services = await open_services(project.db_url, identity="test console")
        try:
            assert services.host is not None
            deadline = time.monotonic() + WAIT
            while True:
                resumed = await services.host.resume(row["run_id"])
                assert resumed is False
                if services.db.get_escalation(row["id"])["status"] == "withdrawn" or time.monotonic() > deadline:
                    return resumed
                await asyncio.sleep(0.5)
        finally:
            services.close()

    asyncio.run(resume())
    assert project.wait_status(row["id"], "withdrawn")


# -- fast: what a hook imports ----------------------------------------------------------------------


HEAVY = ("google.adk", "google.genai", "litellm", "textual", "aiohttp", "psycopg", "dbos")

PROBE = """
import io, os, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
end = os._exit

def report(code):  # the hook ends its process once it has answered: what was imported by then
    heavy = sorted({m for m in sys.modules if m.startswith(%r)})
    print("HEAVY", heavy, code, file=sys.stderr, flush=True)
    end(code)

os._exit = report
from engine.cli.main import main
main(["hook", "claude"])
""" % (HEAVY,)


@pytest.mark.parametrize("rules", ["deny", "ask"])
def test_the_hook_imports_no_heavy_library(project: Project, rules: str) -> None:
    project.rules(ASK.replace("ask_user", "deny") if rules == "deny" else ASK.replace("timeout: 600", "timeout: 1"))
    done = subprocess.run([sys.executable, "-c", PROBE, call(project).decode()], cwd=project.root, capture_output=True,
                          timeout=WAIT, env=project_env())
    assert b"HEAVY [] 0" in done.stderr, done.stderr.decode()[-2000:]
    assert decision(done.stdout)["permissionDecision"] == "deny"


# -- fast: a call the rules decide ------------------------------------------------------------------

# What a call the rules decide does not need: PyYAML and the rules' schema models (pydantic),
# while the project's rules files are unchanged (.escalate/rules-snapshot.json and
# rules-checked.json), the database, asyncio, the broker and desk that wait for a person, and
# argparse (a well-formed command line is read without it); nor the escalation model's dataclasses, nor dataclasses at all
# (in Python 3.11 each class compiles its methods at import, and the module imports inspect:
# engine/kernel/frozen.py).
RULE_PATH_SKIPS = ("yaml", "pydantic", "sqlalchemy", "asyncio", "dbos", "engine.escalation.broker",
                   "engine.escalation.desk", "engine.services", "engine.durable.database", "engine.kernel.responses",
                   "rules.schema", "rules.loader", "engine.kernel.model", "dataclasses", "inspect", "argparse")


def rule_path_imports(project: Project, *argv: str, opinion: bool = True) -> list[str]:
    """Which of RULE_PATH_SKIPS a hook decided by the rules (`opinion`: denied by rule 'touch',
    else no rule matched: no opinion) has imported when it answers."""
    probe = PROBE.replace(repr(HEAVY), repr(RULE_PATH_SKIPS)).replace('["hook", "claude"]', repr(["hook", "claude", *argv]))
    done = subprocess.run([sys.executable, "-c", probe, call(project).decode()], cwd=project.root, capture_output=True,
                          timeout=WAIT, env=project_env())
    if opinion:
        assert decision(done.stdout)["permissionDecision"] == "deny", done.stderr.decode()[-2000:]
        assert "by rule 'touch" in decision(done.stdout)["permissionDecisionReason"]
    else:
        assert done.stdout == b"" and b"HEAVY " in done.stderr, done.stderr.decode()[-2000:]
    line = next(l for l in done.stderr.decode().splitlines() if l.startswith("HEAVY "))
    return sorted({name.split(".")[0] if not name.startswith(("engine.", "rules.")) else name
                   for name in json.loads(line.split(" ", 1)[1].rsplit(" ", 1)[0].replace("'", '"'))})


def test_a_call_the_rules_decide_imports_no_yaml_schema_database_or_asyncio(project: Project) -> None:
    project.rules(ASK.replace("ask_user", "deny"))
    first = rule_path_imports(project)
    assert {"yaml", "pydantic", "rules.schema"} <= set(first)  # files never seen: read and checked
    for name in ("rules-checked.json", "rules-snapshot.json"):
        assert (project.root / ".escalate" / name).stat().st_mode & 0o777 == 0o600
    assert rule_path_imports(project) == []
    project.rules(ASK.replace("ask_user", "deny").replace("touch", "touch "))  # another text: read and checked again
    assert {"yaml", "pydantic"} <= set(rule_path_imports(project))
    assert rule_path_imports(project) == []


@pytest.mark.parametrize("cache", ["rules-checked.json", "rules-snapshot.json"])
@pytest.mark.parametrize("how", ["not ours", "not JSON", "wrong shape"])
def test_a_cache_not_written_by_us_is_not_believed(project: Project, cache: str, how: str) -> None:
    project.rules(ASK.replace("ask_user", "deny"))
    rule_path_imports(project)
    path = project.root / ".escalate" / cache
    if cache == "rules-checked.json":
        (project.root / ".escalate" / "rules-snapshot.json").unlink()  # else the snapshot answers first
    if how == "not ours":  # what a clone or another user's copy gives: the content right, the mode open
        path.chmod(0o644)
    elif how == "not JSON":
        path.write_text("__import__('os').system('touch pwned')")
    else:
        data = json.loads(path.read_text())
        if cache == "rules-checked.json":
            data["checked"].insert(0, "../../etc/passwd")
        else:
            data["rules"][-1]["global"][0][1] = "ALLOW!"
        path.write_text(json.dumps(data))
    assert ("pydantic" if cache == "rules-checked.json" else "yaml") in rule_path_imports(project)  # read again
    assert not (project.root / "pwned").exists()
    assert path.stat().st_mode & 0o777 == 0o600 and rule_path_imports(project) == []


def test_a_snapshot_made_for_other_files_is_never_used(project: Project) -> None:
    """An archive of a project, .escalate/ and all, unpacked over another: its snapshot names
    other inodes and ctimes, so the files there are read, whatever the snapshot says."""
    import shutil

    project.rules(ASK.replace("ask_user", "allow"))
    done = hook(project, call(project))
    assert decision(done.stdout)["permissionDecision"] == "allow"
    elsewhere = project.root.parent / "unpacked"
    shutil.copytree(project.root / ".escalate", elsewhere, copy_function=shutil.copy2)
    project.rules(ASK.replace("ask_user", "deny"))  # this project's file now denies
    for name in ("rules-snapshot.json", "rules-checked.json"):
        shutil.copy2(elsewhere / name, project.root / ".escalate" / name)  # the old snapshot, mode and times kept
    assert rule_path_imports(project) != []  # the file was read: denied, whatever the snapshot said


# -- fast in a project with no .escalate/: the snapshot in the user's cache folder --------------------


def cache_files(cache: Path) -> list[Path]:
    return sorted((cache / "escalate" / "rules").glob("*.json"))


@pytest.mark.parametrize("rules", ["shipped", "given"])
def test_without_a_project_folder_the_rules_are_kept_in_the_users_cache(project: Project, own_cache: Path,
                                                                        tmp_path: Path, rules: str) -> None:
    """A `--user` hook runs in projects that have no `.escalate/`: the shipped rules (no rule
    matches `touch`: no opinion) or a `--rules` file are read once, then kept in the user's
    own cache folder, and the project is left as it was."""
    argv: tuple[str, ...] = ()
    if rules == "given":
        (tmp_path / "mine.yaml").write_text(ASK.replace("ask_user", "deny"))
        argv = ("--rules", str(tmp_path / "mine.yaml"))
    assert "yaml" in rule_path_imports(project, *argv, opinion=rules == "given")
    assert not (project.root / ".escalate").exists()
    folder = own_cache / "escalate" / "rules"
    assert folder.stat().st_mode & 0o777 == 0o700
    [kept] = cache_files(own_cache)
    assert kept.stat().st_mode & 0o777 == 0o600
    assert rule_path_imports(project, *argv, opinion=rules == "given") == []
    other = project.root.parent / "other"  # another project with no .escalate/: the same snapshot
    other.mkdir()
    assert rule_path_imports(Project(other, project.home), *argv, opinion=rules == "given") == []
    assert cache_files(own_cache) == [kept]


def test_a_project_rules_file_is_never_answered_by_the_shipped_snapshot(project: Project, own_cache: Path) -> None:
    rule_path_imports(project, opinion=False)  # no .escalate/: the shipped rules kept in the cache
    project.rules(ASK.replace("ask_user", "deny"))
    assert "yaml" in rule_path_imports(project)  # denied by the project's file, read
    assert rule_path_imports(project) == []


@pytest.mark.parametrize("how", ["folder open to others", "folder a link", "file of another user", "file open",
                                 "other files' snapshot"])
def test_a_cache_folder_not_ours_alone_is_not_believed(project: Project, own_cache: Path, tmp_path: Path,
                                                       how: str) -> None:
    import os
    import shutil

    (tmp_path / "mine.yaml").write_text(ASK.replace("ask_user", "deny"))
    argv = ("--rules", str(tmp_path / "mine.yaml"))
    rule_path_imports(project, *argv)
    folder = own_cache / "escalate" / "rules"
    [kept] = cache_files(own_cache)
    if how == "folder open to others":
        folder.chmod(0o777)
    elif how == "folder a link":  # a link to a folder of ours: still not the cache folder itself
        shutil.move(folder, own_cache / "elsewhere")
        folder.symlink_to(own_cache / "elsewhere")
    elif how == "file of another user":
        os.chown(kept, 12345, 12345)
    elif how == "file open":
        kept.chmod(0o644)
    else:  # a snapshot of this user's with other rules in it: believed only under the same identity
        data = json.loads(kept.read_text())
        data["identity"][2][1] += 1  # another inode
        kept.write_text(json.dumps(data))
    assert "yaml" in rule_path_imports(project, *argv)
    if how != "folder open to others" and how != "folder a link":
        assert rule_path_imports(project, *argv) == []  # replaced by one of ours


def test_a_rules_file_the_schema_refuses_is_refused_at_every_call(project: Project) -> None:
    project.rules(ASK.replace("ask_user", "deny") + "notify: {command: [true], extra: 1}\n")
    for _ in range(2):
        done = hook(project, call(project))
        assert done.returncode == 1 and done.stdout == b"", done.stderr
        assert b"rules.yaml" in done.stderr and b"Traceback" not in done.stderr
    assert not (project.root / ".escalate" / "rules-checked.json").exists()
    assert not (project.root / ".escalate" / "rules-snapshot.json").exists()
