"""`escalate`'s command line as argparse sees it: every command's arguments, help and usage
errors (one line, exit 2). engine/cli/main.py imports it for every command line but the well-formed
`hook claude|codex ...` of an agent's hook, which hook_cmd.py reads without argparse."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from engine.cli.output import EXIT_OK, EXIT_USAGE, write_line


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line, with the contract's exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        write_line(f"{self.prog}: error: {message}")  # it quotes the arguments
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    from engine.kernel.responses import kinds

    parser = _Parser(prog="escalate", description="Terminal escalation console for multi-agent LLM workflows.")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    # `escalate` alone opens the console on the bundled demo: the console's defaults.
    parser.set_defaults(files=[], rules=None, script=None, store=None, run=False, input=None, db=None, agent=None)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    console = sub.add_parser("console", help="open the console on these workflows")
    _console_arguments(console)

    check = sub.add_parser("check", help="parse and analyze .sr files")
    check.add_argument("paths", nargs="+", metavar="PATH", help=".sr files, or folders: every *.sr under them")
    check.add_argument("--format", choices=("text", "json"), default="text", help="diagnostics as text (default) or a JSON array")

    comp = sub.add_parser("compile", help="print or write the generated Python")
    comp.add_argument("file", metavar="FILE.sr", help="the workflow to compile")
    comp.add_argument("-o", "--output", metavar="OUT.py", help="write the Python here instead of printing it")

    run = sub.add_parser("run", help="run one workflow headless")
    run.add_argument("file", metavar="FILE.sr", nargs="?", help="the workflow to run")
    run.add_argument("--agent", metavar="CMD", help='run one ACP agent instead of a workflow: its command, e.g. "gemini --experimental-acp"')
    run.add_argument("--flow", metavar="NAME", help="the flow to start (default: main, else default, else an agent)")
    run.add_argument("--input", metavar="TEXT", default="", help="the run's input ($input in the flow)")
    run.add_argument("--script", metavar="S.yaml", help="scripted model replies, offline (default: <stem>.yaml beside the file)")
    run.add_argument("--rules", metavar="R.yaml", help="rules file (default: the shipped rules, .escalate/rules.yaml over them)")
    run.add_argument("--answers", metavar="A.yaml", help="answers to the run's escalations, in order")
    run.add_argument("--events", metavar="E.jsonl", help="write the run's events here, one JSON object a line")
    run.add_argument("--task", metavar="NAME", help="the task name the rules' taskOverrides match (default: the file's stem)")
    run.add_argument("--workspace", metavar="DIR", help="the folder the tools work in (default: the current one)")
    run.add_argument("--db", metavar="URL", help="the database (default: $ESCALATE_DB or .escalate/escalate.db)")
    run.add_argument("--wait", action="store_true", help="wait for an answer instead of exiting 4")
    run.add_argument("--detach", action="store_true", help="queue the run for `escalate worker`, print its id")

    runs = sub.add_parser("runs", help="list runs and their pending escalations")
    runs.add_argument("--db", metavar="URL", help=_DB_EXISTING)
    runs.add_argument("--all", action="store_true", help="finished runs too")
    runs.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or the contract's JSON")

    answer = sub.add_parser("answer", help="decide a pending escalation")
    answer.add_argument("escalation", metavar="ESC_ID", help="the escalation's id (escalate runs lists them)")
    how = answer.add_mutually_exclusive_group(required=True)
    for kind in kinds():  # one flag per response kind (engine/kernel/responses.py)
        if kind.metavar is not None:
            how.add_argument(kind.flag, dest=kind.name, metavar=kind.metavar, help=kind.flag_help)
        else:
            how.add_argument(kind.flag, dest=kind.name, action="store_true", help=kind.flag_help)
    answer.add_argument("--instructions", metavar="T", help="additional instructions for the agent")
    answer.add_argument("--args", metavar="JSON", help="with --approve: run the tool with these arguments instead")
    answer.add_argument("--db", metavar="URL", help=_DB_EXISTING)

    resume = sub.add_parser("resume", help="continue an interrupted or waiting run, headless")
    resume.add_argument("run_id", metavar="RUN_ID", help="the run's id (escalate runs lists them)")
    resume.add_argument("--answers", metavar="A.yaml", help="answers to the run's escalations, in order")
    resume.add_argument("--wait", action="store_true", help="wait for an answer instead of exiting 4")
    resume.add_argument("--events", metavar="E.jsonl", help="write the run's events (earlier ones too) here")
    resume.add_argument("--db", metavar="URL", help=_DB_EXISTING)

    worker = sub.add_parser("worker", help="execute queued runs and take over interrupted ones, until stopped")
    worker.add_argument("--db", metavar="URL", help="the database (default: $ESCALATE_DB or .escalate/escalate.db)")
    worker.add_argument("--concurrency", metavar="N", type=_positive, default=8, help="runs at a time (default 8)")

    trust = sub.add_parser("trust", help="let this database's runs be continued here (one you did not create)")
    trust.add_argument("--db", metavar="URL", help="the database (default: $ESCALATE_DB or .escalate/escalate.db)")

    rules = sub.add_parser("rules", help="work with rules files")
    rules_sub = rules.add_subparsers(dest="rules_command", parser_class=_Parser, required=True)
    rules_check = rules_sub.add_parser("check", help="validate a rules file")
    rules_check.add_argument("file", metavar="R.yaml", help="the rules file to validate")
    rules_trust = rules_sub.add_parser("trust", help="let this workspace rules file's notify command run (its content as it is now)")
    rules_trust.add_argument("file", metavar="R.yaml", help="the rules file whose exact content you trust")
    rules_schema = rules_sub.add_parser("schema", help="print the JSON Schema of a file format (for editors)")
    rules_schema.add_argument("kind", nargs="?", choices=("rules", "script", "answers"), default="rules",
                              help="which file format (default: rules)")
    hook = sub.add_parser("hook", help="Claude Code's or Codex's hook: the rules, else a person, decide each tool call")
    importlib.import_module("engine.cli.hook_cmd").arguments(hook)

    serve = sub.add_parser("serve", help="the console in a web browser, behind a one-time token")
    _console_arguments(serve)  # `serve` opens the same console, with the same arguments, in each browser session
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=_port, default=8000, help="the port to listen on (default: 8000; 0: any free port)")

    mcp = sub.add_parser("mcp", help="an MCP server with the tool escalate_to_human (stdio; --http: behind a one-time token)")
    mcp.add_argument("--db", metavar="URL", help="the database (default: $ESCALATE_DB or .escalate/escalate.db)")
    mcp.add_argument("--rules", metavar="R.yaml", help="rules file (default: the shipped rules, .escalate/rules.yaml over them)")
    mcp.add_argument("--task", metavar="NAME", help="the task name the rules' taskOverrides match (default: this folder's name)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP (a URL with a one-time token) instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="with --http: the address to listen on (default: 127.0.0.1)")
    mcp.add_argument("--port", type=_port, default=8765, help="with --http: the port (default: 8765; 0: any free port)")

    for command in (console, check, comp, run, serve):
        command.add_argument("--allow-imports-outside", action="store_true",
                             help="let imports reach files outside the folder of the file given here")
    return parser


def _console_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("files", nargs="*", metavar="FILE.sr", help="workflows to open (none: the bundled demo)")
    command.add_argument("--rules", metavar="R.yaml", help="rules file (default: the shipped rules, .escalate/rules.yaml over them)")
    command.add_argument("--script", metavar="S.yaml", help="scripted model replies, offline (default: <stem>.yaml beside each file)")
    command.add_argument("--store", metavar="PATH", help="where run history is kept")
    command.add_argument("--run", action="store_true", help="start the first workflow at once")
    command.add_argument("--input", metavar="TEXT", default=None, help="with --run: the run's input")
    command.add_argument("--agent", metavar="CMD", action="append", default=None,
                         help='an ACP agent to open as a workflow (repeatable), e.g. "gemini --experimental-acp"')
    command.add_argument("--db", metavar="URL", help="the database (default: $ESCALATE_DB or .escalate/escalate.db; "
                         "the demo's own in the user's data folder)")


_DB_EXISTING = "the database, which must exist (default: $ESCALATE_DB or .escalate/escalate.db)"


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("escalate")
        except PackageNotFoundError:  # a source tree that was never installed
            found = "unknown"
        sys.stdout.write(f"escalate {found}\n")
        parser.exit(EXIT_OK)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0-65535): {port}")
    return port


def _positive(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"not a whole number from 1 to 10000: {text!r}")
    return int(text)


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The whole tree, but for an agent's hook (`hook claude|codex ...`, run at every tool call
    of every agent session) its own branch alone: the same arguments and messages, without
    building (and importing for) every other command's."""
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] in ("claude", "codex"):
        parser = _Parser(prog="escalate")
        hook = parser.add_subparsers(dest="command", parser_class=_Parser).add_parser("hook")
        importlib.import_module("engine.cli.hook_cmd").arguments(hook)
        return parser
    return build_parser()
