"""`escalate mcp`: an MCP server with the tool `escalate_to_human` (engine/outside/mcp_server.py).

Stdio by default (the client starts it: `claude mcp add escalate -- escalate mcp`); `--http`
serves streamable HTTP on 127.0.0.1 behind a one-time token (engine/outside/mcp_http.py) and
prints the URL to give the client on stdout. The rules (`--rules`, else the shipped rules with
the project's `.escalate/rules.yaml` over them) and the database (`--db`, $ESCALATE_DB, else
`.escalate/escalate.db`) are checked before anything is served: a bad one is one line, exit 2.
SIGTERM, SIGINT (and SIGHUP on stdio) stop the server, exit 0: a call waiting without a
`requestId` is withdrawn, one with a `requestId` stays for its client to ask again.
Never imports ADK, google.genai or Textual.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from engine.cli.output import EXIT_OK, EXIT_USAGE, write_line


def main(args: argparse.Namespace) -> int:
    from engine.outside.core import load_rules
    from rules.loader import RulesError

    project = Path.cwd()
    try:
        rules = load_rules(project, args.rules)
    except RulesError as exc:
        write_line(str(exc))
        return EXIT_USAGE
    try:
        return asyncio.run(_serve(args, rules, project))
    except KeyboardInterrupt:  # a signal before the handlers were in place
        return EXIT_OK


async def _serve(args: argparse.Namespace, rules: object, project: Path) -> int:
    from engine.durable.urls import DatabaseError
    from engine.outside.core import OutsideDesk
    from engine.outside.mcp_server import EscalateTool, build_server

    try:
        desk = await OutsideDesk.open(rules, db=args.db, identity="escalate mcp")  # type: ignore[arg-type]
    except DatabaseError as exc:
        write_line(f"escalate mcp: error: --db {exc}")
        return EXIT_USAGE
    tool = EscalateTool(desk, project, args.task)
    try:
        server = build_server(tool)
        return await (_http(args, server) if args.http else _stdio(server))
    finally:
        await tool.close()
        desk.close()


async def _stdio(server: object) -> int:
    from engine.outside.core import cancel_on_signals
    from engine.outside.mcp_server import serve_stdio

    task = asyncio.ensure_future(serve_stdio(server))  # type: ignore[arg-type]
    undo = cancel_on_signals(task)
    try:
        await task
    except asyncio.CancelledError:  # a signal: the calls were cancelled with it
        pass
    finally:
        undo()
    return EXIT_OK


async def _http(args: argparse.Namespace, server: object) -> int:
    from engine.cli.serve_cmd import loopback, netloc, shown_host
    from engine.outside.mcp_http import PATH, listen, serve_http
    from engine.token_gate import OneTimeToken

    try:
        sock = listen(args.host, args.port)
    except OSError as exc:
        write_line(f"escalate mcp: error: cannot listen on {netloc(args.host, args.port)}: {exc.strerror or exc}")
        return EXIT_USAGE
    once = OneTimeToken()
    url = f"http://{netloc(shown_host(args.host), sock.getsockname()[1])}{PATH}?token={once.token}"
    print(url, flush=True)
    write_line(f"escalate mcp: streamable HTTP on {netloc(args.host, sock.getsockname()[1])}: give the URL above "
               "to one MCP client (it works once); Ctrl+C stops")
    if not loopback(args.host):
        write_line("escalate mcp: warning: plain HTTP on the network: the URL and the answers can be read on the way")
    await serve_http(server, sock, args.host, once)  # type: ignore[arg-type]
    write_line("escalate mcp: stopped")
    return EXIT_OK
