"""`escalate` and `escalate console`: check the inputs, then open the Textual console.

Everything a user can get wrong (a missing or broken `.sr`, script or rules file) is checked
here, before the first frame, and reported in one line with exit code 2. Textual and the app
are imported only after that; ADK only after the app's first frame.
"""

from __future__ import annotations

import argparse
import gc
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.output import EXIT_OK, EXIT_USAGE, write_line
from engine.files import UnreadableFile, check_regular

if TYPE_CHECKING:
    from tui.app import EscalateApp
    from tui.session import ConsoleSession
    from rules.book import RuleBook

LOG_FILE_NAME = "escalate-console.log"


class UsageError(Exception):
    """One line for stderr; the command exits 2. `positioned` messages already start with
    `FILE:LINE:COL:` and are printed as they are."""

    def __init__(self, message: str, positioned: bool = False) -> None:
        super().__init__(message)
        self.positioned = positioned


def main(args: argparse.Namespace) -> int:
    # Start-up only makes long-lived objects: collecting passes over them cost ~80 ms before the
    # first frame. The session's preload (after that frame) freezes them and collects again.
    gc.disable()
    try:
        return _console(args)
    finally:
        gc.enable()


def _console(args: argparse.Namespace) -> int:
    try:
        if args.agent:  # ACP agents open as workflows of their own (engine/cli/acp_agent.py)
            from engine.cli.acp_agent import AgentUsage, write_agent_workflow

            try:
                args.files = [*args.files, *(str(write_agent_workflow(a, Path.cwd())[0]) for a in args.agent)]
            except AgentUsage as exc:
                raise UsageError(str(exc)) from None
        files, script, rules = _inputs(args)
    except UsageError as exc:
        write_line(str(exc) if exc.positioned else f"escalate: error: {exc}")
        return EXIT_USAGE
    try:
        db_url = _database(args)
    except UsageError as exc:
        write_line(f"escalate: error: {exc}")
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="escalate-demo-") as scratch:
        # The demo's tools write into a scratch workspace, never into the user's folder.
        workspace = Path(scratch) if not args.files else Path.cwd()
        try:  # a --store file to import: its path checked here, and its lines when it is small
            session = _session(files, script, rules, workspace, Path(args.store) if args.store else None, db_url,
                               _rule_book(args))
        except Exception as exc:
            from engine.escalation.store import StoreError  # only now: not on the first frame's path

            if not isinstance(exc, StoreError):
                raise
            write_line(str(exc))
            return EXIT_USAGE
        _route_logs()
        app = _app(session, args)
        result = app.run()
    if session.store_error:  # a big --store file, imported after the first frame, was broken
        write_line(session.store_error)
        return EXIT_USAGE
    return EXIT_OK if result is None else int(result)


DEMO_DB = "demo.db"


def _database(args: argparse.Namespace) -> str:
    """The console's database URL, checked (not opened: that waits for the first frame). The
    bundled demo keeps its own in the user's data folder, unless --db or $ESCALATE_DB says."""
    import os

    from engine.durable.urls import DatabaseError, resolve_url, sqlite_path

    given = args.db
    if given is None and not args.files and not os.environ.get("ESCALATE_DB"):
        from platformdirs import user_data_path

        given = "sqlite:///" + str(user_data_path("escalate") / DEMO_DB)
    try:
        url = resolve_url(given)
    except DatabaseError as exc:
        raise UsageError(f"--db {exc}") from None
    path = sqlite_path(url)
    if path is not None:
        from engine.private import make_folders

        try:
            make_folders(path.parent)  # 0700: the database is this user's alone
        except OSError as exc:
            raise UsageError(f"--db {url}: cannot create {path.parent}: {exc.strerror or exc}") from None
        if not os.access(path.parent, os.W_OK) or (path.exists() and not path.is_file()):
            raise UsageError(f"--db {url}: cannot write a database there")
    return url


def _app(session: "ConsoleSession", args: argparse.Namespace) -> "EscalateApp":
    from tui.app import EscalateApp  # Textual: only now that the inputs are known good

    return EscalateApp(session, run_first=args.run, first_input=args.input)


def _inputs(args: argparse.Namespace) -> tuple[list[Path], Path | None, object]:
    """The workflows, the explicit script and the loaded rules; UsageError on any bad one."""
    from engine.demo import demo_rules, demo_workflows

    if args.input is not None and not args.run:
        raise UsageError("--input is only used with --run")
    files = [Path(f) for f in args.files] if args.files else demo_workflows()
    for path in files:
        try:
            check_regular(path)  # a FIFO or device is refused here, never opened
        except UnreadableFile as exc:
            raise UsageError(f"{path}: {exc}") from None
    script = Path(args.script) if args.script else None
    if args.files or script:  # the bundled demo is known good; the user's files are checked now
        for path in files:
            script_path = script_for(path, script)
            if script_path is not None:
                _check_script(script_path)
    if args.files:
        for path in files:
            _check_compiles(path)
    if args.rules:
        return files, script, _load_rules(args.rules)
    from rules.workspace import workspace_rules_path

    base = None if args.files else demo_rules()
    if workspace_rules_path().is_file():  # taught rules: checked now, layered over the base
        return files, script, _load_rules(None, base)
    # Shipped rules are known good: the session parses them with the engine, after the first frame.
    return files, script, base


def _rule_book(args: argparse.Namespace) -> "RuleBook":
    """Where taught rules go: the --rules file, else .escalate/rules.yaml over the base rules."""
    from engine.demo import demo_rules
    from rules.book import RuleBook

    return RuleBook(Path(args.rules) if args.rules else None, None if args.files else demo_rules())


def script_for(workflow: Path, explicit: Path | None) -> Path | None:
    """`--script` when given, else `<stem>.yaml` beside the workflow when it exists."""
    if explicit is not None:
        return explicit
    beside = workflow.with_suffix(".yaml")
    return beside if beside.is_file() else None


def _check_script(path: Path) -> None:
    from engine.runtime.script import ScriptError, load_script

    try:
        load_script(path)
    except ScriptError as exc:
        raise UsageError(str(exc).splitlines()[0], positioned=True) from None


def _check_compiles(path: Path) -> None:
    from engine.lang.compiler import CompileError, load_workflow

    try:
        load_workflow(path)
    except CompileError as exc:
        from engine.lang.diagnostics import render_text

        diagnostics = list(getattr(exc, "diagnostics", []) or [])
        errors = [d for d in diagnostics if d.is_error] or diagnostics
        # The first line of the first error: `FILE:LINE:COL: error[E0001]: message`.
        first = render_text(errors[:1]) if errors else str(exc)
        raise UsageError(first.strip().splitlines()[0], positioned=bool(errors)) from None


def _load_rules(path: str | None, base: Path | None = None) -> object:
    from rules import RulesError, RulesUnreadable
    from rules.loader import load_layered

    try:
        return load_layered(path, base)
    except (RulesError, RulesUnreadable) as exc:
        raise UsageError(str(exc).splitlines()[0], positioned=True) from None


def _session(files: list[Path], script: Path | None, rules: object, workspace: Path, store: Path | None,  # noqa: ANN202
             db_url: str | None, book: "RuleBook"):
    from tui.session import ConsoleSession, WorkflowEntry

    entries = [WorkflowEntry(path, script_for(path, script)) for path in files]
    return ConsoleSession(entries, rules=rules, store=store, workspace=workspace, db_url=db_url, rule_book=book)


def _route_logs() -> None:
    """ADK and the runtime log to stderr, which a full-screen app hides: send them to a file in
    this user's own folder (a predictable name in a shared folder could be another user's file).
    Without such a folder the console keeps no log, and says so here, before its first frame."""
    from engine.private import NotPrivate, private_folder, user_folder, why

    handler: logging.Handler
    try:
        folder = private_folder(user_folder())
        handler = logging.FileHandler(folder / LOG_FILE_NAME, encoding="utf-8")
    except (NotPrivate, OSError) as exc:
        write_line(f"escalate: warning: the console keeps no log: {why(exc)}")
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)  # ADK's deprecation warnings too


def checked_database(args: argparse.Namespace) -> str:
    """The console's checks of its arguments, without opening it (for `escalate serve`, which
    opens it in each browser session): its database URL; UsageError, worded as above, on the
    first bad input."""
    _inputs(args)
    return _database(args)
