"""Process-wide ADK setup, done once before the first run: keep ADK's logging and warnings off
the user's terminal, and stop ADK from re-trying a missing optional import on every call; and
ADK's imports and first use, paid on a thread when the process's first model turn is due
(`models_ready`), never before (docs/startup.md)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import logging
import os
import sys
import threading
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator

log = logging.getLogger("escalate.runtime")

# ADK imports its optional A2A agent inside every node build (google/adk/workflow/utils/
# _workflow_graph_utils.py). Without the `a2a` package, that failed import re-executes two ADK
# modules from bytecode each time: about 1 ms per agent call. A None entry in sys.modules makes
# the import fail at once, which is exactly what ADK expects when a2a is absent.
_OPTIONAL_A2A = "google.adk.agents.remote_a2a_agent"


def prepare_adk(log_file: str | None = None) -> None:
    quiet_adk(log_file)
    if _OPTIONAL_A2A not in sys.modules and importlib.util.find_spec("a2a") is None:
        sys.modules[_OPTIONAL_A2A] = None  # type: ignore[assignment]


def quiet_adk(log_file: str | None = None) -> None:
    """Route the `google_adk` logger to `log_file` (or ESCALATE_ADK_LOG), else drop it; silence
    ADK's deprecation/experimental warnings, which are noise for our users."""
    target = log_file or os.environ.get("ESCALATE_ADK_LOG")
    for name in ("google_adk", "google.adk", "google_genai"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = False
        logger.addHandler(logging.FileHandler(target) if target else logging.NullHandler())
    for category in (DeprecationWarning, FutureWarning, UserWarning):
        warnings.filterwarnings("ignore", category=category, module=r"google\.(adk|genai).*")
    warnings.filterwarnings("ignore", message=r".*\[EXPERIMENTAL\].*")


_warm_up: Callable[[], None] | None = None
_ready = False  # the warm-up returned in this process: later turns go straight on
_warming: set[int] = set()  # threads running the warm-up: its own model turn must not wait for it


def warm_up_with(warm_up: Callable[[], None]) -> None:
    """The warm-up `models_ready` runs: engine.runtime.engine's (one scripted run, once per
    process), named here by that module, which sits above the agent call that awaits it."""
    global _warm_up
    _warm_up = warm_up


@contextmanager
def warming() -> Iterator[None]:
    """The warm-up runs in this thread: its own model turn goes straight on. ADK's imports
    make ~200,000 objects that live as long as the process: fewer collector passes meanwhile,
    and no middle one (engine/kernel/collector.py)."""
    from engine.kernel.collector import collecting_less

    _warming.add(threading.get_ident())
    try:
        with collecting_less(), _models_built_on_first_use(), _extras_left_out():
            yield
    finally:
        _warming.discard(threading.get_ident())


# Optional extras of ADK's dependencies that a model turn does not use, absent while ADK is first
# imported: each package then runs as installed without that extra, a configuration it supports
# (an `except ImportError` around the import). Measured at the warm-up (docs/startup.md):
_EXTRAS_LEFT_OUT = (
    # google-genai[aiohttp]: its async transport when aiohttp is installed (escalate's `serve`
    # needs it). Never used here: our Gemini models pass genai an httpx transport of their own
    # (engine/runtime/models.py real_model), and genai imports httpx anyway. ~0.1 s, 8 MiB.
    "aiohttp",
    # google-genai[httpx2]: for callers passing their own httpx2 client; genai makes none.
    "httpx2",
    # httpx[cli]: httpx's command line, `httpx.main` (rich, click, pygments).
    "httpx._main",
)


@contextmanager
def _extras_left_out() -> Iterator[None]:
    """The extras cannot be found by this thread's imports meanwhile; other threads import as
    usual (`serve` has aiohttp imported already; another thread's import is left alone)."""
    finder = _LeftOut(threading.get_ident())
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class _LeftOut:
    """A finder (Python's import system, `sys.meta_path`) saying that an extra is not installed,
    to one thread's imports; an extra already imported is never looked for."""

    def __init__(self, thread: int) -> None:
        self.thread = thread

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name in _EXTRAS_LEFT_OUT and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r} (not needed by a model turn)", name=name)
        return None


@contextmanager
def _models_built_on_first_use() -> Iterator[None]:
    """Pydantic models defined meanwhile (by any thread: pydantic's default is the process's)
    build their validators on first use, not at definition.

    google.genai's ~470 models defer already (their own `defer_build=True`); ADK's ~80 and the
    ~40 of fastapi.openapi that ADK imports (through google.adk.auth) do not, and most are never
    used by a turn. Pydantic has no public default for every model but its `config_defaults`
    (ConfigDict's documented `defer_build`, read when a class is defined): set for the warm-up's
    imports and first run only, then given back, so models defined later (ours) build as
    before. Measured (docs/startup.md): the warm-up's CPU -0.1 s and RSS -6 MiB; the models a
    turn uses are built on its first use (a first real Gemini turn after it: no measurable
    change), later turns unchanged."""
    from pydantic._internal import _config  # no public setting: measured reason above

    defaults = _config.config_defaults
    before = defaults.get("defer_build", False)
    defaults["defer_build"] = True
    try:
        yield
    finally:
        defaults["defer_build"] = before


async def models_ready() -> None:
    """Before a model turn: ADK imported and used once (1-4 s), on a thread, so that the loop the
    run shares (a console, other runs, DBOS) goes on meanwhile; at once after the first time.
    Every turn that comes meanwhile awaits the same warm-up: one thread, not one of the loop's
    executor threads per waiting run (DBOS records steps with those). A warm-up that fails is
    logged: the turn then meets the failure where it is reported."""
    global _ready
    if _ready or _warm_up is None or threading.get_ident() in _warming:
        return
    await asyncio.wrap_future(_started_warm_up(_warm_up))
    _ready = True


def start_warm_up() -> None:
    """Start the warm-up now, on its thread, for a caller that knows a model turn is coming
    (`resume` of an agent's decided escalation); the turn's `models_ready` awaits the same one."""
    if not _ready and _warm_up is not None:
        _started_warm_up(_warm_up)


_warm_up_done: concurrent.futures.Future[None] | None = None
_start_lock = threading.Lock()


def _started_warm_up(warm_up: Callable[[], None]) -> concurrent.futures.Future[None]:
    global _warm_up_done
    with _start_lock:
        if _warm_up_done is None:
            _warm_up_done = concurrent.futures.Future()
            threading.Thread(target=_warm_up_on_thread, args=(warm_up, _warm_up_done), name="escalate-warm-up").start()
        return _warm_up_done


def _warm_up_on_thread(warm_up: Callable[[], None], done: concurrent.futures.Future[None]) -> None:
    try:
        warm_up()
    except Exception:
        log.warning("the runtime's warm-up failed", exc_info=True)
    done.set_result(None)
