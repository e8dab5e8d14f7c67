"""`escalate serve` on the command line: where it listens, what it prints, bad input, stopping."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from engine.cli.parser import build_parser
from engine.cli.serve_cmd import console_command
from tests.web.serving import auth_refactor, serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def listening(port: int) -> list[str]:
    """The local addresses listening on `port`, from the kernel's own tables (hex, as in
    /proc/net/tcp: 0100007F is 127.0.0.1)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_it_listens_on_127_0_0_1_only_by_default_and_prints_the_link(tmp_path) -> None:
    served = serve(tmp_path)  # the bundled demo, as `escalate` alone
    try:
        assert served.host == "127.0.0.1"
        assert listening(served.port) == ["0100007F"]  # 127.0.0.1 and nothing else (no 0.0.0.0, no ::)
        assert status(served.base + "/") == 403
    finally:
        code, err = served.stop(signal.SIGINT)  # Ctrl+C
    assert code == 0, err
    assert "open the link above (it works once, in one browser)" in err and "escalate serve: stopped" in err
    assert served.link not in err and "token" not in err  # the token is printed once, on stdout
    assert listening(served.port) == []


def test_host_says_where(tmp_path) -> None:
    served = serve(tmp_path, *auth_refactor("--host", "127.0.0.2"))
    try:
        assert served.host == "127.0.0.2" and listening(served.port) == ["0200007F"]
    finally:
        code, err = served.stop()
    assert code == 0, err
    assert "warning" not in err  # loopback: no plain-HTTP warning


@pytest.mark.parametrize("argv, message", [
    (["missing.sr"], "missing.sr"),
    (["bad.sr"], "bad.sr:2:"),
    (["--input", "x"], "--input is only used with --run"),
    (["--port", "70000"], "not a port number (0-65535): 70000"),
    (["--port", "http"], "not a port number: 'http'"),
    (["--rules", "missing.yaml"], "missing.yaml"),
    (["--db", "mysql://x/y"], "--db"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_is_served(tmp_path, argv, message) -> None:
    (tmp_path / "bad.sr").write_text("streetrace v1\nagent main\n")
    done = subprocess.run([sys.executable, "-m", "engine", "serve", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # no link
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "engine", "serve", "--port", str(port)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"escalate: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_defaults_and_the_console_each_session_runs(tmp_path, monkeypatch) -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["serve", "flows/a.sr", "--rules", "r.yaml", "--script", "s.yaml", "--run",
                                      "--input", "it's $HOME; rm -rf /", "--allow-imports-outside"])
    first = console_command(args, first=True)
    assert first == [sys.executable, "-m", "engine", "console", str(tmp_path / "flows" / "a.sr"),
                     "--rules", str(tmp_path / "r.yaml"), "--script", str(tmp_path / "s.yaml"),
                     "--allow-imports-outside", "--run", "--input", "it's $HOME; rm -rf /"]
    # Later sessions (another tab, a reconnect) open the console without starting the run again.
    assert console_command(args, first=False) == first[:-3]

