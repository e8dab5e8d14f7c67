"""`escalate run FILE.sr`: one workflow, headless.

stdout gets only the flow's final result (a string as it is, anything else as JSON); logs and
errors go to stderr. Exit codes (contract): 0 done, 1 runtime error, 2 compile error or usage
(bad --script/--answers/--rules, missing file), 3 aborted or stopped, 4 waiting on a human
with no answer to give.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from engine.cli.output import write_line as _err  # every message goes through the sanitizer
from engine.files import UnreadableFile, check_regular
from engine.text_safety import utf8_text

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STOPPED, EXIT_WAITING = 0, 1, 2, 3, 4


class UsageError(Exception):
    """A bad input file or option: one line, exit 2."""


def main(args: argparse.Namespace) -> int:
    from engine.runtime.adk_setup import prepare_adk

    prepare_adk()
    if (args.agent is None) == (args.file is None):
        _err("escalate run: give a workflow FILE.sr or --agent \"CMD ARGS\" (one of the two)")
        return EXIT_USAGE
    if args.agent is not None:
        from engine.cli.acp_agent import AgentUsage, agent_workflow

        try:
            args.file, task = agent_workflow(args)
        except AgentUsage as exc:
            _err(str(exc))
            return EXIT_USAGE
        args.task = args.task or task
    if args.detach:
        clash = [name for name, given in (("--answers", args.answers), ("--events", args.events), ("--wait", args.wait)) if given]
        if clash:
            _err(f"--detach: a worker runs the run; {', '.join(clash)} only apply to a run in this process")
            return EXIT_USAGE
    try:
        inputs = _load_inputs(args)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    return asyncio.run(_run(args, **inputs))


def _load_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Every input file validated before anything runs (nothing half-applies)."""
    from engine.escalation.answers import AnswersError, load_answers
    from engine.runtime.events import prepare_events_file
    from engine.runtime.script import ScriptError, load_script
    from rules.loader import RulesError, load_layered

    source = Path(args.file)
    try:
        check_regular(source)  # a FIFO or device is refused here, never opened
    except UnreadableFile as exc:
        raise UsageError(f"{args.file}:1:1: cannot read workflow file: {exc}") from None
    try:
        rules = load_layered(args.rules)  # else the shipped rules, with .escalate/rules.yaml over them
        # As in the console: `--script`, else `<stem>.yaml` beside the workflow when it exists.
        from engine.cli.console_cmd import script_for

        script_path = script_for(source, Path(args.script) if args.script else None)
        script = load_script(script_path) if script_path is not None else None
        answers = load_answers(args.answers) if args.answers else []
    except (RulesError, ScriptError, AnswersError) as exc:
        raise UsageError(str(exc)) from None
    workspace = Path(args.workspace) if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise UsageError(f"--workspace {args.workspace}: not a directory")
    events = Path(args.events) if args.events else None
    if events is not None:
        try:
            prepare_events_file(events)  # this run's events only; never blocks on a FIFO
        except OSError as exc:
            raise UsageError(f"--events {args.events}: cannot write: {exc.strerror or exc}") from None
    return {"source": source, "rules": rules, "script": script, "answers": answers, "workspace": workspace, "events": events}


async def _run(
    args: argparse.Namespace, *, source: Path, rules: Any, script: Any, answers: list[Any], workspace: Path, events: Path | None
) -> int:
    from engine.durable.urls import DatabaseError
    from engine.runtime.engine import CompileFailed
    from engine.services import open_services

    try:  # durable: its runs are recorded, its escalations wait in the database
        # resumes=False: this process starts its run; no queue of its own polled while it waits
        services = await open_services(args.db, identity="escalate run", resumes=False)
    except DatabaseError as exc:
        _err(f"--db {exc}")
        return EXIT_USAGE
    engine = services.engine(rules, workspace=workspace, script=script, events=events)
    try:
        try:
            workflow = engine.load(source)
        except CompileFailed as exc:
            from engine.lang.diagnostics import render_text

            _err(render_text(exc.diagnostics) or str(exc))
            return EXIT_USAGE
        try:
            workflow.cls().entry(args.flow)  # a missing --flow or entry point is a usage error
        except LookupError as exc:
            _err(f"{source}: {exc.args[0] if exc.args else exc}")
            return EXIT_USAGE

        task = args.task or utf8_text(source.stem)
        if args.detach:  # queued for `escalate worker`: its id on stdout, for scripts
            run_id = engine.queue_run(workflow, flow=args.flow, input=args.input or "", task=task)
            sys.stdout.write(run_id + "\n")
            _err(f"run {run_id} queued for a worker (escalate worker --db ...)")
            return EXIT_OK

        async def start() -> Any:
            return engine.start_run(workflow, flow=args.flow, input=args.input or "", task=task)

        return await drive(engine, start, answers=answers, wait=args.wait, label=str(source),
                           models=models_line(workflow.cls, script), db_arg=args.db)
    finally:
        services.close()


def models_line(workflow_cls: Any, script: Any) -> str:
    """Which model answers the agents, said on stderr before the run starts ('' without agents
    or prompts: nothing to answer)."""
    if not workflow_cls.AGENTS and not workflow_cls.PROMPTS:
        return ""
    if script is not None:
        return f"models: scripted replies from {script.path} (offline)"
    from engine.runtime.models import is_real

    real = [f"{name} = {spec.provider}/{spec.model_id}" for name, spec in workflow_cls.MODELS.items() if is_real(spec)]
    real += [f"{name} = ACP agent {spec.acp_command!r}" for name, spec in workflow_cls.MODELS.items() if spec.acp_command]
    return f"models: {', '.join(real)}" if real else "models: none configured (no --script, no <stem>.yaml beside the file)"


async def drive(engine: Any, start: Any, *, answers: list[Any], wait: bool, label: str, models: str = "",
                db_arg: str | None = None) -> int:
    """Run (or continue) one run headless to its end and give the contract's exit code;
    `models` (which model answers) is said right after the run's id; `db_arg` (the `--db`
    given) is repeated in the commands printed for a run left waiting."""
    from engine.cli.hints import answer_lines
    from engine.escalation.headless import HeadlessResponder, waiting_message

    stuck: list[list[str]] = []  # per escalation left waiting: its message, then the commands to paste
    stopped = asyncio.Event()  # nobody can answer: the run is left waiting in the database
    handle: Any = None

    def on_waiting(pending: Any) -> None:
        esc = pending.escalation
        if wait:  # --wait: a console or `escalate answer` will decide; the run waits for it
            _err(waiting_message(pending))
            for line in answer_lines(esc.id, esc.options, db_arg):
                _err(f"  {line}")
            return
        # Headless and nobody can answer: the run stops here (exit 4) and stays in the database,
        # waiting; `escalate answer` then `escalate resume` continue it.
        stuck.append([waiting_message(pending), *(f"  {line}" for line in answer_lines(esc.id, esc.options, db_arg, esc.run_id))])
        engine.detach()
        stopped.set()

    responder = HeadlessResponder(engine.broker, answers, on_waiting=on_waiting, wait=wait)
    engine.subscribe(_echo_log)
    loop = asyncio.get_running_loop()
    terminated: list[int] = []

    def terminate(signum: int) -> None:
        # SIGTERM (a CI timeout, `kill`): the run is cancelled, so its commands are killed with it.
        terminated.append(signum)
        if handle is not None:
            handle.cancel()

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, terminate, signum)
    try:
        handle = await start()
        if handle is None:
            return EXIT_ERROR
        _err(f"run {handle.id}")
        if models:
            _err(models)
        ended, left = asyncio.ensure_future(handle.wait()), asyncio.ensure_future(stopped.wait())
        await asyncio.wait([ended, left], return_when=asyncio.FIRST_COMPLETED)
        ended.cancel()
        left.cancel()
        status = handle.status
        if engine.host is not None:
            await engine.host.settle_ended()
    finally:
        responder.close()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)
    if terminated:
        _err(f"{label}: stopped by {signal.Signals(terminated[0]).name}")
        return 128 + terminated[0]
    if stuck:
        message, *commands = stuck[0]  # the first escalation's
        _err(f"{label}: {message}")
        for line in commands:
            _err(line)
        return EXIT_WAITING
    return outcome_code(handle, status, label)


def outcome_code(handle: Any, status: Any, label: str) -> int:
    from engine.runtime.engine import RunStatus

    if status is RunStatus.DONE:
        sys.stdout.write(_result_text(handle.result) + "\n")
        return EXIT_OK
    mismatch = _answer_mismatch(handle.exception)
    if mismatch is not None:  # a bad answers file: its own FILE:LINE:COL line, a usage error
        _err(str(mismatch))
        return EXIT_USAGE
    _err(f"{label}: {status.value}: {handle.error}")
    if status in (RunStatus.STOPPED, RunStatus.ABORTED):
        return EXIT_STOPPED
    return EXIT_ERROR


def _answer_mismatch(exc: BaseException | None) -> BaseException | None:
    from engine.escalation.headless import AnswerMismatch

    for candidate in (exc, getattr(exc, "__cause__", None)):
        if isinstance(candidate, AnswerMismatch):
            return candidate
    return None


def _echo_log(event: Any) -> None:
    """The flow's `log`/`notify` lines and guardrail warnings, on stderr as they happen (the
    run's own end is reported once, by `_run`)."""
    if event.type == "log" and event.fields.get("level") != "error":
        level = event.fields.get("level")
        _err(f"{level}: {event.fields.get('message')}" if level and level != "warning" else str(event.fields.get("message")))


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)
