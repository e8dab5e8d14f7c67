"""`escalate` and `escalate console`: check the inputs, then open the Textual console.

Everything a user can get wrong (a missing or broken `.sr`, script or rules file) is checked
here, before the first frame, and reported in one line with exit code 2. Textual and the app
are imported only after that; ADK only after the app's first frame.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from engine.cli.main import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from engine.escalation.store import HistoryStore

LOG_FILE_NAME = "escalate-console.log"


class UsageError(Exception):
    """One line for stderr; the command exits 2. `positioned` messages already start with
    `FILE:LINE:COL:` and are printed as they are."""

    def __init__(self, message: str, positioned: bool = False) -> None:
        super().__init__(message)
        self.positioned = positioned


def main(args: argparse.Namespace) -> int:
    try:
        files, script, rules = _inputs(args)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n" if exc.positioned else f"escalate: error: {exc}\n")
        return EXIT_USAGE
    from engine.escalation.store import StoreError

    with tempfile.TemporaryDirectory(prefix="escalate-demo-") as scratch:
        # The demo's tools write into a scratch workspace, never into the user's folder.
        workspace = Path(scratch) if not args.files else Path.cwd()
        try:  # opens the store (creating its folder); a small one is read and checked here
            session = _session(files, script, rules, workspace, Path(args.store) if args.store else None)
        except StoreError as exc:
            sys.stderr.write(f"{exc}\n")
            return EXIT_USAGE
        store_verdict = _check_big_store(session.history_store) if not session.store_loaded.is_set() else None
        from tui.app import EscalateApp  # Textual: only now that the inputs are known good (store: meanwhile)

        error = store_verdict() if store_verdict is not None else None
        if error:
            sys.stderr.write(f"{error}\n")
            return EXIT_USAGE
        _route_logs(Path(args.store).parent if args.store else Path(tempfile.gettempdir()))
        app = EscalateApp(session, run_first=args.run, first_input=args.input)
        result = app.run()
    return EXIT_OK if result is None else int(result)


def _inputs(args: argparse.Namespace) -> tuple[list[Path], Path | None, object]:
    """The workflows, the explicit script and the loaded rules; UsageError on any bad one."""
    from engine.demo import demo_rules, demo_workflows

    if args.input is not None and not args.run:
        raise UsageError("--input is only used with --run")
    files = [Path(f) for f in args.files] if args.files else demo_workflows()
    for path in files:
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
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
    # Shipped rules are known good: the session parses them with the engine, after the first frame.
    return files, script, (None if args.files else demo_rules())


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


def _load_rules(path: str) -> object:
    from rules import RulesError, RulesUnreadable, load_rules

    try:
        return load_rules(path)
    except (RulesError, RulesUnreadable) as exc:
        raise UsageError(str(exc).splitlines()[0], positioned=True) from None


def _session(files: list[Path], script: Path | None, rules: object, workspace: Path, store: Path | None):  # noqa: ANN202
    from tui.session import ConsoleSession, WorkflowEntry

    entries = [WorkflowEntry(path, script_for(path, script)) for path in files]
    return ConsoleSession(entries, rules=rules, store=store, workspace=workspace)


def _check_big_store(store: "HistoryStore | None") -> Callable[[], str | None] | None:
    """A store too big to read before the first frame is checked in a child process, on the
    other core, while Textual is imported; the returned function waits for its verdict (the
    error line, or None). The console itself reads the store after its first frame."""
    from engine.escalation.store import StoreError

    if store is None:
        return None
    if not hasattr(os, "fork"):  # no fork (Windows): check here, the first frame waits
        try:
            store.load()
        except StoreError as exc:
            return lambda: str(exc)
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no threads run here yet, it only parses and reports
        os.close(read_end)
        try:
            store.load()
            verdict = ""
        except StoreError as exc:
            verdict = str(exc)
        except BaseException as exc:  # noqa: BLE001 - anything else still becomes one line
            verdict = f"{store.path}: error: {exc}"
        os.write(write_end, verdict.encode("utf-8"))
        os._exit(0)
    os.close(write_end)

    def verdict() -> str | None:
        with os.fdopen(read_end, "rb") as pipe:
            text = pipe.read().decode("utf-8", "replace")
        os.waitpid(pid, 0)
        return text or None

    return verdict


def _route_logs(folder: Path) -> None:
    """ADK and the runtime log to stderr, which a full-screen app hides: send them to a file."""
    handler = logging.FileHandler(folder / LOG_FILE_NAME, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)  # ADK's deprecation warnings too
