"""`escalate hook claude|codex`: an agent's command hook (docs/outside.md); `escalate hook
install|uninstall claude|codex [--project DIR | --user]`: register it in the agent's settings.

The hook reads the agent's JSON on stdin and prints its decision JSON on stdout (exit 0), or
nothing (no opinion: the agent's own permissions apply). Anything wrong (bad input, an
unreadable rules file or database) is one line on stderr and exit 1, which both agents take as a
non-blocking error: never an approval, never a traceback. It imports no ADK, google.genai,
LiteLLM, Textual, aiohttp or DBOS, and a call the rules decide no asyncio, database, PyYAML,
argparse or pydantic either (tests/outside/test_hook.py, docs/outside.md "Speed"): it runs for every tool call.

`install codex` also says what Codex needs before it runs them (engine/outside/codex_setup.py:
the project trusted, each new or changed hook reviewed in Codex's TUI).

Exit codes: hook 0 answered (or no opinion), 1 not answered (a non-blocking error); install and
uninstall 0, 1 the file cannot be changed, 2 usage.
"""

from __future__ import annotations

import math
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, NoReturn, Sequence

from engine.cli.output import write_line

if TYPE_CHECKING:
    import argparse

HOOK_ERROR = 1  # a non-blocking error for Claude Code and Codex (2 would block the call)
UNBOUNDED_TIMEOUT = 3600  # the hook's timeout when the rules let a tool approval wait without a deadline
TIMEOUT_MARGIN = 30  # seconds above the longest deadline: the default is applied and said first


def arguments(hook: argparse.ArgumentParser) -> None:
    """`escalate hook ...`'s arguments (engine/cli/main.py)."""
    sub = hook.add_subparsers(dest="hook_command", required=True, metavar="{claude,codex,install,uninstall}",
                              parser_class=type(hook))
    for kind, title in (("claude", "Claude Code"), ("codex", "Codex")):
        run = sub.add_parser(kind, help=f"{title}'s command hook: reads its JSON on stdin, prints its decision")
        _decider_options(run)
    for action in ("install", "uninstall"):
        where = sub.add_parser(action, help=f"{action} the hook in the agent's settings")
        where.add_argument("agent", choices=("claude", "codex"), help="the agent")
        place = where.add_mutually_exclusive_group()
        place.add_argument("--project", metavar="DIR", help="this project's settings (default: the current folder)")
        place.add_argument("--user", action="store_true", help="your user settings (every project)")
        if action == "install":
            _decider_options(where)


# The options of the hook (and of `install`, which writes them into its command): (option,
# metavar, help). Each takes one value; argparse names its attribute after the option.
DECIDER_OPTIONS = (
    ("--db", "URL", "the database (default: $ESCALATE_DB or .escalate/escalate.db in the project)"),
    ("--rules", "R.yaml", "rules file (default: the shipped rules, the project's .escalate/rules.yaml over them)"),
    ("--task", "NAME", "the task name the rules' taskOverrides match (default: the project folder's name)"),
)


def _decider_options(parser: argparse.ArgumentParser) -> None:
    for option, metavar, help in DECIDER_OPTIONS:
        parser.add_argument(option, metavar=metavar, help=help)


def hook_arguments(argv: Sequence[str]) -> SimpleNamespace | None:
    """What argparse (engine/cli/parser.py) makes of a well-formed `hook claude|codex` command
    line, read without importing argparse (~28 M instructions of a call's 155 M, at every tool
    call): each of DECIDER_OPTIONS as `--db V` or `--db=V`, in any order, the last one winning.
    None for anything else (an abbreviation, `-h`, a value that starts with `-`, a missing
    value, an unknown word), which argparse then reads, with its own messages and exit code."""
    if len(argv) < 2 or argv[0] != "hook" or argv[1] not in ("claude", "codex"):
        return None
    values: dict[str, str | None] = {option[2:]: None for option, _, _ in DECIDER_OPTIONS}
    words = iter(argv[2:])
    for word in words:
        option, equals, value = word.partition("=")
        if option[:2] != "--" or option[2:] not in values:
            return None
        if not equals:
            value = next(words, None)
            if value is None or value.startswith("-"):  # argparse's rules for such a value are its own
                return None
        values[option[2:]] = value
    return SimpleNamespace(command="hook", hook_command=argv[1], **values)


def main(args: argparse.Namespace) -> int:
    if args.hook_command in ("install", "uninstall"):
        return _settings(args)
    return _hook(args.hook_command, args)


def _hook(kind: str, args: argparse.Namespace) -> int:
    from engine.outside.agents import AGENTS
    from engine.outside.hooks import MAX_INPUT_BYTES, NOTIFICATION, BadInput, decide_by_rules, parse_call

    agent, name = AGENTS[kind], f"escalate hook {kind}"
    try:
        call = parse_call(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1))
        answer, asked = decide_by_rules(agent, call, rules_path=args.rules, task=args.task)
    except BadInput as exc:
        return _fail(f"{name}: {exc}: no decision")
    except KeyboardInterrupt:
        return _fail(f"{name}: stopped before a decision")
    except Exception as exc:  # a rules file: its errors are one line already
        return _fail(f"{name}: {_line(exc)}: no decision")
    if call.event == NOTIFICATION:  # no opinion; the consoles are told the session waits on its person
        from engine.outside.hooks import note_attention

        try:
            note_attention(agent, call, db=args.db, task=args.task)
        except Exception as exc:  # the database: its errors are one line already
            return _fail(f"{name}: {_line(exc)}: the notification was not recorded")
        _deliver(None)
    if asked is None:  # decided by the rules (or nothing to decide): no asyncio, no database
        _deliver(answer)
    import asyncio

    from engine.outside.hooks import ask_person

    try:
        asyncio.run(ask_person(agent, asked, db=args.db, deliver=_deliver))
    except (asyncio.CancelledError, KeyboardInterrupt):
        return _fail(f"{name}: stopped before a decision: the request was withdrawn")
    except Exception as exc:  # the database: its errors are one line already
        return _fail(f"{name}: {_line(exc)}: no decision")
    return 0


def _line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__


def _deliver(answer: dict | None) -> NoReturn:
    """The answer on stdout, then the process ends at once: the agent waits for the hook's end,
    and closing the services (their news listener's thread, the interpreter's teardown) took
    half a second more. What matters is written already: the decision and the session's row
    are committed; the news socket left behind is removed by the next process that sends to it,
    as a killed process's is (engine/durable/signals.py)."""
    import os

    if answer is not None:
        import json

        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _settings(args: argparse.Namespace) -> int:
    from engine.outside.agents import AGENTS
    from engine.outside.settings import HookEntry, SettingsError, install, uninstall

    agent = AGENTS[args.agent]
    project = None if args.user else Path(args.project or ".").resolve()
    if project is not None and not project.is_dir():
        write_line(f"--project {args.project}: no such folder")
        return 2
    path = agent.settings_file(project)
    try:
        if args.hook_command == "uninstall":
            changes = uninstall(path, agent.kind)
        else:
            timeout, why = _timeout(args, project or Path.cwd())
            if timeout is None:
                return 2
            command = _command(agent.kind, args)
            changes = install(path, [HookEntry(e, None, command, timeout) for e in agent.events], agent.kind)
            write_line(why, sys.stdout)
    except SettingsError as exc:
        write_line(str(exc))
        return 1
    for line in changes or [f"{path}: already as it should be: nothing changed"]:
        write_line(f"{path}: {line}" if changes else line, sys.stdout)
    if agent.kind == "codex" and args.hook_command == "install":  # Codex runs them only once trusted
        from engine.outside.codex_setup import steps

        for line in steps(project, changed=bool(changes)):
            write_line(f"codex: {line}", sys.stdout)
    return 0


def _timeout(args: argparse.Namespace, project: Path) -> tuple[int | None, str]:
    """The hook's own timeout: above the longest deadline the rules give a tool approval, so
    that the rules' default is applied (and recorded) before the agent gives up on the hook."""
    from engine.outside.core import load_rules, longest_wait
    from rules.loader import RulesError

    try:
        longest = longest_wait(load_rules(project, args.rules))
    except RulesError as exc:
        write_line(str(exc))
        return None, ""
    if longest is None:
        return UNBOUNDED_TIMEOUT, (f"hook timeout {UNBOUNDED_TIMEOUT} s: your rules let a tool approval wait for a "
                                   f"person without a deadline; after {UNBOUNDED_TIMEOUT} s the agent stops the hook, the "
                                   "request is withdrawn and the agent's own permission applies")
    timeout = int(math.ceil(longest)) + TIMEOUT_MARGIN
    return timeout, (f"hook timeout {timeout} s: above the longest deadline your rules give a tool approval "
                     f"({longest:g} s), after which its default applies (deny)")


def _command(kind: str, args: argparse.Namespace) -> str:
    """The hook's command: this Python running escalate (no PATH needed), with the options given.
    `-P`: the agent runs it in the project's folder, which `-m` alone would put first on the
    import path: a project with an `engine/` package of its own would run instead, at every tool call."""
    words = [sys.executable, "-P", "-m", "engine", "hook", kind]
    for option in ("db", "rules", "task"):
        value = getattr(args, option, None)
        if value:
            words += [f"--{option}", str(Path(value).resolve()) if option == "rules" else value]
    return shlex.join(words)


def _fail(message: str) -> int:
    write_line(message)
    return HOOK_ERROR
