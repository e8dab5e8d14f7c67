"""`escalate serve`: the console in a web browser, behind a one-time token.

The arguments are the console's, checked here as `escalate console` checks them (bad input:
one line, exit 2, nothing served). Each browser session then runs `escalate console` with
them, in a process of its own, on the same database: a decision made in the browser is
written there, and reaches its run wherever that run is waiting. The link printed on stdout
works once, in one browser (tui/web/gate.py). SIGTERM, SIGINT or SIGHUP stop the server: the
consoles quit (their runs stay in the database) and the command exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from engine.cli.console_cmd import UsageError, checked_database
from engine.cli.output import EXIT_OK, EXIT_USAGE, write_line

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main(args: argparse.Namespace) -> int:
    try:
        db_url = checked_database(args)
    except UsageError as exc:
        write_line(str(exc) if exc.positioned else f"escalate: error: {exc}")
        return EXIT_USAGE
    # The consoles get the database through the environment, not their command lines: a
    # password in a PostgreSQL URL stays out of `ps`.
    os.environ["ESCALATE_DB"] = db_url
    return asyncio.run(_serve(args))


def console_command(args: argparse.Namespace, *, first: bool) -> list[str]:
    """`escalate console` with the arguments `serve` was given (paths made absolute; the
    database is $ESCALATE_DB). `--run` starts the first workflow once, in the first browser
    session: sessions opened later (another tab, a reconnect) find that run in the database."""
    command = [sys.executable, "-m", "engine", "console", *(str(Path(f).absolute()) for f in args.files)]
    for option in ("rules", "script", "store"):
        value = getattr(args, option)
        if value is not None:
            command += [f"--{option}", str(Path(value).absolute())]
    if args.allow_imports_outside:
        command.append("--allow-imports-outside")
    for agent in args.agent or ():  # ACP agents, as workflows of their own
        command += ["--agent", agent]
    if first and args.run:
        command.append("--run")
        if args.input is not None:
            command += ["--input", args.input]
    return command


async def _serve(args: argparse.Namespace) -> int:
    from tui.web.server import ConsoleServer  # aiohttp and textual-serve: only for this command

    _log_to_stderr()
    sessions = 0

    def command() -> list[str]:
        nonlocal sessions
        sessions += 1
        return console_command(args, first=sessions == 1)

    server = ConsoleServer(args.host, args.port, command)
    try:
        port = await server.start()
    except OSError as exc:
        write_line(f"escalate: error: cannot listen on {netloc(args.host, args.port)}: "
                   f"{os.strerror(exc.errno) if exc.errno else exc}")
        return EXIT_USAGE
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        print(f"http://{netloc(shown_host(args.host), port)}/?token={server.gate.token}", flush=True)
        write_line(f"escalate serve: the console on {netloc(args.host, port)}: open the link above "
                   "(it works once, in one browser); Ctrl+C stops")
        if not loopback(args.host):
            write_line("escalate serve: warning: plain HTTP on the network: the link and the console can be read "
                       "on the way; prefer an SSH tunnel or a TLS proxy (docs/console.md)")
        await stop.wait()
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
        await server.stop()
    write_line("escalate serve: stopped")
    return EXIT_OK


def _log_to_stderr() -> None:
    """One line per browser session opened or closed, on stderr (never a request's URL)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("escalate serve: %(message)s"))
    log = logging.getLogger("escalate.serve")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown_host(host: str) -> str:
    """The host in the printed link: a wildcard address is no place a browser can go, the
    machine's name is."""
    return socket.gethostname() if host in ("", "0.0.0.0", "::") else host


def netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
