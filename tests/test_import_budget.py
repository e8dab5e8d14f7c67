"""Each command imports only what its path needs (issue 26, "Start in half a second"; the budget
in ms is in docs/startup.md). Every case runs in a fresh interpreter, on a real SQLite file,
and looks at `sys.modules` when the command is done: no timing is asserted.

- No ADK, google.genai or LiteLLM until a model turn is due (a flow that only asks a person never
  imports them, in `run` nor in `resume`), and never for `answer`, `runs` or `check`; nor
  pydantic for `answer` and `runs` (rows are checked in plain Python, engine/durable/rows.py).
- No Textual outside the console; no web server (fastapi: ADK's own import). A model turn
  imports neither genai's unused extras (aiohttp, httpx2) nor httpx's command line (rich,
  pygments), and builds only the pydantic models of ADK's it uses (adk_setup.warming).
- No PostgreSQL driver for SQLite where DBOS is not imported (DBOS itself imports psycopg at
  `import dbos`: docs/startup.md); never psycopg2 or asyncpg.
- The paths a hook shares (rules loaded and matched, the database opened, decisions read,
  news listened to) import none of ADK, Textual, aiohttp, DBOS or psycopg.
- Start-up collects less (engine/kernel/collector.py): a few dozen collector passes where
  Python's thresholds made ~540, and the thresholds as they were when the command is done;
  ADK's warm-up ends with no middle pass over what it made, and reads no script file.
- `answer` does not import the tools' registry (only `--args` needs it); `resume` of a run whose
  agent's escalation was decided starts ADK's warm-up before DBOS's launch (docs/startup.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "runtime" / "data"

MODEL = ("google.adk", "google.genai", "litellm")  # a model turn's libraries
WEB = ("aiohttp", "fastapi", "starlette", "uvicorn")
PG_DRIVERS = ("psycopg", "psycopg2", "asyncpg")
NEVER_OUTSIDE_CONSOLE = ("textual", "rich", *WEB)
READ_OR_DECIDE = (*MODEL, *NEVER_OUTSIDE_CONSOLE, *PG_DRIVERS, "dbos", "rules.schema")

# Runs `escalate ARGV` in this interpreter, then writes the modules imported (None entries, which
# mark an optional import known to be absent, are not imports) and the exit code to $OUT.
_COMMAND = textwrap.dedent("""
    import json, os, sys
    from engine.cli.main import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    with open(os.environ["OUT"], "w") as out:
        json.dump({"code": code, "modules": loaded}, out)
""")


def _loaded(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return sorted({p for p in packages for m in modules if m == p or m.startswith(p + ".")})


def _escalate(workspace: Path, *argv: str) -> tuple[int, list[str], str]:
    """(exit code, modules imported, stdout) of `escalate ARGV` in a fresh interpreter."""
    out = workspace / "modules.json"
    done = subprocess.run([sys.executable, "-c", _COMMAND, *argv], cwd=workspace, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(out)}, timeout=120)
    assert out.is_file(), done.stderr
    found = json.loads(out.read_text())
    out.unlink()
    return found["code"], found["modules"], done.stdout


FLOW_ASKING = """\
flow main:
    $go = escalate to human "Ship " + $input + "?"
    return "shipped: " + $go
"""


@pytest.fixture
def waiting(tmp_path: Path) -> tuple[Path, str, str]:
    """A workspace whose database holds one run waiting on a person, raised by a flow with no
    agent: (workspace, --db URL, run id)."""
    (tmp_path / "ship.sr").write_text(FLOW_ASKING)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    code, modules, _ = _escalate(tmp_path, "run", "ship.sr", "--input", "v1", "--db", db)
    assert code == 4
    # `run` itself: the database, DBOS and the flow, not a model turn's libraries nor a web server.
    assert _loaded(modules, (*MODEL, *NEVER_OUTSIDE_CONSOLE, "psycopg2", "asyncpg", "rules.schema")) == []
    code, _, listed = _escalate(tmp_path, "runs", "--db", db, "--format", "json")
    assert code == 0
    [run] = json.loads(listed)
    return tmp_path, db, run["run_id"]


def test_runs_and_answer_read_and_decide_with_the_database_alone(waiting: tuple[Path, str, str]) -> None:
    workspace, db, run_id = waiting
    code, modules, _ = _escalate(workspace, "runs", "--db", db)
    assert (code, _loaded(modules, (*READ_OR_DECIDE, "pydantic"))) == (0, [])  # rows are checked in plain Python
    code, modules, said = _escalate(workspace, "answer", f"{run_id}.1", "--text", "yes", "--db", db)
    assert (code, said) == (0, f"{run_id}.1: decided (text)\n")
    assert _loaded(modules, (*READ_OR_DECIDE, "pydantic", "engine.runtime.tools.registry", "engine.flow")) == []


def test_resume_imports_no_model_library_when_no_model_turn_is_due(waiting: tuple[Path, str, str]) -> None:
    workspace, db, run_id = waiting
    assert _escalate(workspace, "answer", f"{run_id}.1", "--text", "yes", "--db", db)[0] == 0
    code, modules, said = _escalate(workspace, "resume", run_id, "--db", db)
    assert (code, said) == (0, "shipped: yes\n")
    assert _loaded(modules, (*MODEL, *NEVER_OUTSIDE_CONSOLE, "psycopg2", "asyncpg")) == []


def test_check_imports_neither_the_database_nor_a_model(tmp_path: Path) -> None:
    (tmp_path / "ship.sr").write_text(FLOW_ASKING)
    code, modules, _ = _escalate(tmp_path, "check", "ship.sr")
    assert (code, _loaded(modules, (*READ_OR_DECIDE, "sqlalchemy", "pydantic"))) == (0, [])


def test_a_model_turn_imports_adk_but_not_the_console_nor_litellm(tmp_path: Path) -> None:
    """The other side of the budget: a scripted agent turn does import ADK (so the cases above
    would see it), and still no Textual, no LiteLLM (a real model's extra), no second driver."""
    code, modules, said = _escalate(tmp_path, "run", str(DATA / "loops.sr"), "--script", str(DATA / "loops.yaml"),
                                    "--db", f"sqlite:///{tmp_path / 'runs.db'}")
    assert code == 0 and said.startswith("[")
    assert _loaded(modules, ("google.adk", "google.genai")) == ["google.adk", "google.genai"]
    assert _loaded(modules, ("textual", "litellm", "psycopg2", "asyncpg")) == []
    # The extras of genai and httpx a turn does not use (adk_setup._EXTRAS_LEFT_OUT): genai's
    # aiohttp transport and httpx2 client, httpx's command line with rich and pygments (and
    # click, which `import dbos` brings anyway).
    assert _loaded(modules, ("aiohttp", "httpx2", "rich", "pygments")) == []
    assert "httpx" in modules  # genai's transport, the one our Gemini models use


# `escalate ARGV` with the collector's passes counted per generation (and those made while the
# collector was held off), and its thresholds and state after.
_PASSES = textwrap.dedent("""
    import gc, json, os, sys
    from engine.cli.main import main
    from engine.kernel import collector
    passes = [0, 0, 0]
    held = [0]

    def count(phase, info):
        if phase == "start":
            passes[info["generation"]] += 1
            held[0] += bool(collector._starting)  # a command's start-up, until its services are open

    gc.callbacks.append(count)
    before = gc.get_threshold()
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    with open(os.environ["OUT"], "w") as out:
        json.dump({"code": code, "passes": passes, "held": held[0], "before": before, "after": gc.get_threshold(),
                   "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}, out)
""")


def _run_loops(tmp_path: Path, script: str) -> dict:
    """`escalate run` of data/loops.sr (six scripted turns) under `script`, which writes what it
    saw as JSON to $OUT: that JSON."""
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-c", script, "run", str(DATA / "loops.sr"), "--script",
                           str(DATA / "loops.yaml"), "--db", f"sqlite:///{tmp_path / 'runs.db'}"],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "OUT": str(out)}, timeout=120)
    assert out.is_file(), done.stderr
    return json.loads(out.read_text())


def test_start_up_makes_no_collector_pass_and_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    """A cold `run` of six scripted agent turns: SQLAlchemy, DBOS, ADK and genai imported, DBOS
    launched, the run done. Python's thresholds made 492 young, 45 middle and 4 full passes over
    the ~300,000 objects those imports make (16% of their CPU time); a young threshold of 50,000
    for the whole start, ~20 (130-185 ms at load 14-20). Now none until the services are open
    (then what exists is frozen), and no middle pass during ADK's warm-up
    (engine/kernel/collector.py); the collector is on again with Python's thresholds."""
    found = _run_loops(tmp_path, _PASSES)
    assert found["code"] == 0
    assert found["held"] == 0, found
    assert sum(found["passes"]) < 150, found["passes"]
    assert found["after"] == found["before"] and found["enabled"]
    assert found["frozen"] > 100_000, found  # out of every later pass


# ADK's warm-up in a fresh process, the middle generation's count past Python's threshold (10)
# beforehand; then allocations, so that the collector's next pass comes. Each pass past the
# young generation notes how many objects it walks.
_WARM_UP_ALONE = textwrap.dedent("""
    import gc, json, os, sys
    import engine.runtime.engine as engine
    walked = []

    def note(phase, info):
        if phase == "start" and info["generation"] > 0:
            walked.append(sum(len(gc.get_objects(generation=g)) for g in range(info["generation"] + 1)))

    for _ in range(11):
        gc.collect(0)
    gc.callbacks.append(note)
    engine.warm_up()
    junk = [[] for _ in range(5_000)]
    gc.callbacks.remove(note)
    with open(os.environ["OUT"], "w") as out:
        json.dump({"walked": walked, "frozen": gc.get_freeze_count(), "modules": sorted(sys.modules)}, out)
""")


@pytest.fixture(scope="module")
def warm_up_alone(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("warm-up")
    out = folder / "out.json"
    done = subprocess.run([sys.executable, "-c", _WARM_UP_ALONE], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(out)}, timeout=120)
    assert out.is_file(), done.stderr
    return json.loads(out.read_text())


def test_adks_warm_up_makes_no_middle_pass_over_what_it_imported(warm_up_alone: dict) -> None:
    """The warm-up's ~200,000 objects are frozen before Python's thresholds come back
    (engine.runtime.engine.warm_up): before, the young passes it counted made the next pass a
    middle one over all of them, 65-70 ms of a cold `run`'s or `resume`'s CPU."""
    assert warm_up_alone["frozen"] > 100_000, warm_up_alone["frozen"]
    assert all(count < 50_000 for count in warm_up_alone["walked"]), warm_up_alone["walked"]


def test_adks_warm_up_reads_no_script_file(warm_up_alone: dict) -> None:
    """Its one scripted reply is made, not read: reading a script checks it against
    rules/schema.py's pydantic models, which a process with real models never needs."""
    assert _loaded(warm_up_alone["modules"], ("rules.schema",)) == []


# `escalate ARGV`, then how many of ADK's pydantic models (and fastapi's, which ADK imports) were
# built, and whether a model defined afterwards is built at once, as pydantic's default says.
_MODELS_BUILT = textwrap.dedent("""
    import json, os, sys
    from pydantic import BaseModel
    from engine.cli.main import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code

    def models(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from models(sub)

    adk = {m for m in models(BaseModel) if m.__module__.startswith(("google.adk.", "fastapi."))}

    class Later(BaseModel):
        x: int

    with open(os.environ["OUT"], "w") as out:
        json.dump({"code": code, "adk": len(adk), "built": sum(m.__pydantic_complete__ for m in adk),
                   "later_built": Later.__pydantic_complete__}, out)
""")


def test_adks_models_are_built_on_first_use_and_ours_as_pydantic_says(tmp_path: Path) -> None:
    """ADK's warm-up defines ~120 models of ADK's and fastapi's, most of which no turn uses:
    they build on first use (adk_setup._models_built_on_first_use); before, all were built at
    their import. A model defined after the warm-up builds at once again (pydantic's default)."""
    found = _run_loops(tmp_path, _MODELS_BUILT)
    assert found["code"] == 0 and found["adk"] > 100
    assert found["built"] < found["adk"] // 2, found
    assert found["later_built"] is True


HOOK_PATH = textwrap.dedent("""
    import json, os, sys
    from engine.durable.decisions import DecisionStore, pending_from_json
    from engine.durable.urls import resolve_url, shown
    from engine.services.database import open_database
    from rules.loader import load_layered

    rules = load_layered(None)  # the shipped rules, .escalate/rules.yaml over them when it exists
    rule = rules.match_tool("ship", "Bash", {"command": "git push --force origin main"})
    db = open_database(sys.argv[1], existing=True)
    store = DecisionStore(db)
    pending = store.still_pending(store.pending_ids())
    stop = store.listen(lambda text: None)  # news of decisions, as a waiting hook hears them
    stop()
    db.close()
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    with open(os.environ["OUT"], "w") as out:
        json.dump({"rule": rule.action.value if rule else None, "pending": [p.escalation.id for p in pending],
                   "modules": loaded}, out)
""")


@pytest.mark.parametrize("taught", [False, True], ids=["shipped rules", "taught rules over them"])
def test_the_paths_a_hook_shares_import_no_model_console_web_server_dbos_or_driver(
        waiting: tuple[Path, str, str], taught: bool) -> None:
    """`escalate hook` (issue 24) will load and match the rules, open the database, read and
    wait for decisions on every tool call of every agent session."""
    workspace, db, run_id = waiting
    if taught:  # a user's file is validated against rules/schema.py's models: pydantic, no more
        (workspace / ".escalate").mkdir(exist_ok=True)
        (workspace / ".escalate" / "rules.yaml").write_text(
            "escalationRules:\n  global:\n    - {pattern: 'git push --force', action: deny}\n")
    out = workspace / "hook.json"
    done = subprocess.run([sys.executable, "-c", HOOK_PATH, db], cwd=workspace, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(out)}, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert found["pending"] == [f"{run_id}.1"]
    assert found["rule"] == ("deny" if taught else found["rule"])
    allowed_schema = ("rules.schema",) if taught else ()
    assert _loaded(found["modules"], tuple(m for m in READ_OR_DECIDE if m not in allowed_schema)) == []


AGENT_AFTER_ASKING = """\
prompt p: \"\"\"Answer.\"\"\"
agent a:
    instruction p
flow main:
    $go = escalate to human "Ship " + $input + "?"
    return run agent a $go
"""

CONSOLE = textwrap.dedent("""
    import asyncio, json, os, sys
    from pathlib import Path
    from rules import default_rules
    from tui.app import EscalateApp
    from tui.session import ConsoleSession, WorkflowEntry

    async def main():
        session = ConsoleSession([WorkflowEntry(Path("ship.sr"))], rules=default_rules(), workspace=Path.cwd(),
                                 db_url=sys.argv[1])
        app = EscalateApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await asyncio.wait_for(app.engine_ready.wait(), 120)  # the database open, the runs continued
            await pilot.pause()
            listed = [p.escalation.id for p in session.pending()]
            loaded = sorted(name for name, module in sys.modules.items() if module is not None)
        with open(os.environ["OUT"], "w") as out:
            json.dump({"listed": listed, "modules": loaded}, out)

    asyncio.run(main())
""")


def test_an_idle_console_holds_no_model_library(waiting: tuple[Path, str, str]) -> None:
    """The console lists and decides with Textual, the database and DBOS; ADK is warmed when a
    run that can reach a model turn starts, not after the first frame (idle memory)."""
    workspace, db, run_id = waiting
    # A run of a workflow with an agent, waiting on a person before any model turn: the console
    # continues it (it waits again), which needs no model either.
    (workspace / "agent.sr").write_text(AGENT_AFTER_ASKING)
    (workspace / "agent.yaml").write_text("agents:\n  a: [done]\n")
    assert _escalate(workspace, "run", "agent.sr", "--input", "v2", "--db", db)[0] == 4
    out = workspace / "console.json"
    done = subprocess.run([sys.executable, "-c", CONSOLE, db], cwd=workspace, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(out)}, timeout=180)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    assert len(found["listed"]) == 2 and f"{run_id}.1" in found["listed"]
    assert "textual" in found["modules"] and "dbos" in found["modules"]
    assert _loaded(found["modules"], (*MODEL, *WEB, "psycopg2", "asyncpg")) == []


FIRST_IMPORT_THREAD = textwrap.dedent("""
    import importlib.abc, json, os, sys, threading
    from engine.cli.main import main

    seen = {}

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name in ("google.adk.runners", "google.genai.types") and name not in seen:
                seen[name] = threading.current_thread() is threading.main_thread()
            return None

    sys.meta_path.insert(0, Watch())
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    with open(os.environ["OUT"], "w") as out:
        json.dump({"code": code, "on_the_main_thread": seen}, out)
""")


def test_the_first_model_turn_imports_adk_on_a_thread_not_on_the_runs_loop(tmp_path: Path) -> None:
    """ADK's imports (1-4 s) would stop the loop the run shares (the console's screen, other
    runs, DBOS's work): the first turn awaits them on a thread (adk_setup.models_ready)."""
    found = _run_loops(tmp_path, FIRST_IMPORT_THREAD)
    assert found == {"code": 0, "on_the_main_thread": {"google.adk.runners": False, "google.genai.types": False}}


AGENT_ASKING = """\
prompt p: \"\"\"Do the next step.\"\"\"
agent worker:
    instruction p
flow main:
    $x = run agent worker $input
    return $x
"""
AGENT_ASKING_SCRIPT = ("agents:\n  worker:\n"
                       "    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}\n"
                       "    - 'went on'\n")


async def test_resume_warms_adk_up_at_once_only_when_an_agents_decided_escalation_goes_on(
        waiting: tuple[Path, str, str]) -> None:
    """`resume` of a run whose agent raised the escalation, decided: the agent's call goes on
    with a model turn, so ADK's warm-up starts before DBOS's launch (resume_cmd._warm_up_if_due);
    still waiting, or raised by the flow itself: nothing is warmed (a flow that asks people
    never imports ADK)."""
    from engine.cli.resume_cmd import _warm_up_if_due
    from engine.runtime.adk_setup import models_ready
    from engine.services import open_database

    workspace, db_url, flow_run = waiting
    (workspace / "agent.sr").write_text(AGENT_ASKING)
    (workspace / "agent.yaml").write_text(AGENT_ASKING_SCRIPT)
    code, _, _ = _escalate(workspace, "run", "agent.sr", "--input", "go", "--db", db_url)
    assert code == 4
    code, _, listed = _escalate(workspace, "runs", "--db", db_url, "--format", "json")
    [(agent_run, asked)] = [(run["run_id"], run["pending"][0]["id"]) for run in json.loads(listed)
                            if run["run_id"] != flow_run]
    db = open_database(db_url, existing=True)
    try:
        assert not _warm_up_if_due(db, agent_run)  # waiting: resume would wait again
        assert _escalate(workspace, "answer", f"{flow_run}.1", "--text", "yes", "--db", db_url)[0] == 0
        assert not _warm_up_if_due(db, flow_run)  # the flow's own question: no model turn follows
        assert _escalate(workspace, "answer", asked, "--option", "go", "--db", db_url)[0] == 0
        assert _warm_up_if_due(db, agent_run)
        await models_ready()  # the same warm-up, on its thread
        assert "google.adk.runners" in sys.modules
    finally:
        db.close()
    code, _, said = _escalate(workspace, "resume", agent_run, "--db", db_url)
    assert (code, said) == (0, "went on\n")


def test_an_idle_worker_holds_no_model_library(tmp_path: Path) -> None:
    """`escalate worker` started, ready, stopped with nothing to run: ADK is warmed up at its
    runs' first model turn (adk_setup.models_ready, on a thread), not at start (~65 MiB idle)."""
    out = tmp_path / "modules.json"
    worker = subprocess.Popen([sys.executable, "-c", _COMMAND, "worker", "--db", f"sqlite:///{tmp_path / 'runs.db'}"],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "OUT": str(out)})
    try:
        assert worker.stderr is not None
        for line in worker.stderr:
            if "taking up to" in line:  # ready: its queue listened to
                break
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    found = json.loads(out.read_text())
    assert found["code"] == 0 and "dbos" in found["modules"]
    assert _loaded(found["modules"], (*MODEL, *NEVER_OUTSIDE_CONSOLE, "psycopg2", "asyncpg")) == []


EXTRAS = textwrap.dedent("""
    import json, os, sys, threading
    from engine.runtime.adk_setup import warming

    seen = {}

    def tries(name):
        try:
            __import__(name)
            return True
        except ImportError:
            return False

    with warming():
        seen["aiohttp, by the warm-up"] = tries("aiohttp")
        other = threading.Thread(target=lambda: seen.update({"httpx2, by another thread": tries("httpx2")}))
        other.start()
        other.join()
    seen["aiohttp, after"] = tries("aiohttp")
    with open(os.environ["OUT"], "w") as out:
        json.dump(seen, out)
""")


def test_the_extras_left_out_are_absent_to_the_warm_up_thread_alone(tmp_path: Path) -> None:
    """ADK's warm-up finds none of the extras it does not use (adk_setup._EXTRAS_LEFT_OUT);
    another thread meanwhile, and any thread after, imports them as usual."""
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-c", EXTRAS], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "OUT": str(out)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"aiohttp, by the warm-up": False, "httpx2, by another thread": True,
                                           "aiohttp, after": True}


# The collector's policies in one process, as a command and ADK's warm-up use them.
_HOLDS = textwrap.dedent("""
    import gc
    from engine.kernel import collector

    before = gc.get_threshold()
    collector.start_up()
    assert not gc.isenabled()
    made = [[] for _ in range(10_000)]
    collector.started()
    assert gc.isenabled() and gc.get_freeze_count() > 10_000
    first = gc.get_freeze_count()
    collector.start_up()  # a command called again in the same process (the tests do)
    assert not gc.isenabled()
    again = [[] for _ in range(10_000)]
    collector.started()
    assert gc.isenabled() and gc.get_freeze_count() == first, "only the first start-up freezes"
    with collector.collecting_less():  # ADK's warm-up: young passes rarer, no middle one
        young, middle, _full = gc.get_threshold()
        assert gc.isenabled() and young >= 50_000 and middle >= 1_000
    assert gc.get_threshold() == before
    gc.disable()  # the console's start-up: the collector off until its first frame
    collector.start_up()
    collector.started()
    assert not gc.isenabled(), "a collector that was off is left off"
    print("ok")
""")


def test_the_collector_is_off_during_start_up_and_only_the_first_start_up_freezes() -> None:
    done = subprocess.run([sys.executable, "-c", _HOLDS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
