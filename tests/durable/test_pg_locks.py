"""Nothing another PostgreSQL role can do stops escalate (issue 22, finding 10): a role that may
only connect holds the advisory key that creating the tables takes, or a role with a privilege
on one table locks it; `escalate runs` and `escalate answer` (real processes) end promptly with
one line naming the lock and who holds it, exit 2, instead of waiting forever."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence

import psycopg
import pytest

from engine.durable.database import CREATE_LOCK_KEY, Database

pytestmark = pytest.mark.timeout(120)

HANG = 60  # s: far past the lock timeout; a command still running then waits forever


def _escalate(*args: str) -> subprocess.CompletedProcess[str]:
    return _escalate_at_once(args)[0]


def _escalate_at_once(*commands: Sequence[str]) -> list[subprocess.CompletedProcess[str]]:
    """The commands run side by side: each waits out the lock timeout on its own, so together
    they take one timeout, not one each."""
    procs = [subprocess.Popen([sys.executable, "-m", "engine", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for args in commands]
    done = []
    try:
        for args, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=HANG)
            done.append(subprocess.CompletedProcess([*args], proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


@pytest.fixture
def intruder(pg_url: str) -> Iterator[psycopg.Connection]:
    """A session of another role (CONNECT only, as every role has by default), named `prowler`."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'intruder') "
                      "THEN CREATE ROLE intruder LOGIN; END IF; END $$")
    conn = psycopg.connect(pg_url.replace("postgres@", "intruder@", 1), autocommit=True, application_name="prowler")
    try:
        yield conn
    finally:
        conn.close()


def _one_line_naming(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_the_advisory_key_held_by_a_connect_only_role_stops_nothing_once_the_tables_exist(pg_url, intruder) -> None:
    Database(pg_url).close()  # the tables exist, as on any database used before
    intruder.execute("SELECT pg_advisory_lock(%s)", (CREATE_LOCK_KEY,))
    done = _escalate("runs", "--db", pg_url)
    assert (done.returncode, done.stdout, done.stderr) == (0, "no runs\n", "")
    done = _escalate("answer", "nope.1", "--approve", "--db", pg_url)
    assert done.returncode == 1 and "no such escalation" in done.stderr


def test_the_advisory_key_held_while_the_tables_are_missing_is_named(pg_url, intruder) -> None:
    intruder.execute("SELECT pg_advisory_lock(%s)", (CREATE_LOCK_KEY,))
    for done in _escalate_at_once(["runs", "--db", pg_url], ["answer", "x.1", "--approve", "--db", pg_url]):
        _one_line_naming(done, "cannot open the database", f"advisory lock {CREATE_LOCK_KEY}", "user intruder",
                         "application prowler", "pid ")
    intruder.execute("SELECT pg_advisory_unlock_all()")
    assert _escalate("runs", "--db", pg_url).returncode == 0  # nothing half-made: it opens once let go


def test_a_table_locked_by_another_role_is_named(pg_url, intruder) -> None:
    Database(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as admin:  # a role another version of a tool was given
        admin.execute("GRANT UPDATE ON escalate_runs, escalate_escalations TO intruder")
    intruder.execute("BEGIN")
    intruder.execute("LOCK TABLE escalate_runs, escalate_escalations IN ACCESS EXCLUSIVE MODE")
    try:
        listed, as_json, answered = _escalate_at_once(["runs", "--db", pg_url],
                                                      ["runs", "--all", "--format", "json", "--db", pg_url],
                                                      ["answer", "r1.1", "--approve", "--db", pg_url])
        _one_line_naming(listed, "ACCESS EXCLUSIVE on escalate_", "user intruder", "application prowler")
        _one_line_naming(as_json, "ACCESS EXCLUSIVE")
        _one_line_naming(answered, "ACCESS EXCLUSIVE on escalate_escalations", "user intruder")
    finally:
        intruder.execute("ROLLBACK")
