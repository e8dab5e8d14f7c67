"""Process-wide ADK setup, done once before the first run: keep ADK's logging and warnings off
the user's terminal, and stop ADK from re-trying a missing optional import on every call."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import warnings

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
