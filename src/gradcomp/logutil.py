"""Logging set-up for pipeline scripts: progress lines go to the rule's log file."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def log_to_file(path: str | Path | None, level: int = logging.INFO) -> logging.Logger:
    """Send the ``gradcomp`` loggers, warnings and an uncaught exception to ``path`` and stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w"))
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)
    logger = logging.getLogger("gradcomp")

    def log_uncaught(exc_type, exc, tb):
        logger.error("stopped by %s: %s", exc_type.__name__, exc, exc_info=(exc_type, exc, tb))

    sys.excepthook = log_uncaught
    return logger
