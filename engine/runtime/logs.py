"""Keep ADK's logging and warnings off the user's terminal (and out of the console's screen)."""

from __future__ import annotations

import logging
import os
import warnings


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
