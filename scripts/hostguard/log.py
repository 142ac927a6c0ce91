"""One log line per event on stdout or stderr (cron appends both to the script's log).

Lines are `YYYY-MM-DD HH:MM:SS LEVEL text`, redacted; a line that cannot be
written (the log's disk is full) never ends the program: what it was doing
(delivering an alert) matters more.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from .redact import redact

# Set inside fail2ban's process (the ban tool's Python actions): lines go to fail2ban's log instead.
_logger: logging.Logger | None = None
_LEVELS = {"INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR}


def to_logger(logger: logging.Logger) -> None:
    """From now on, this process's lines go to LOGGER (fail2ban's), not to stdout or stderr."""
    global _logger
    _logger = logger


def line(level: str, text: str) -> str:
    """The log line for LEVEL and TEXT (redacted), without the newline."""
    return f"{time.strftime('%Y-%m-%d %H:%M:%S')} {level} {redact(text)}"


def log(level: str, text: str, err: bool = False) -> None:
    """Writes one line to stdout (stderr when ERR), or to the logger of to_logger; never raises."""
    if _logger is not None:
        _logger.log(_LEVELS.get(level, logging.ERROR), "%s", redact(text))
        return
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(line(level, text) + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def info(text: str) -> None:
    log("INFO", text)


def warn(text: str, err: bool = True) -> None:
    log("WARN", text, err)


def error(text: str, err: bool = True) -> None:
    log("ERROR", text, err)


def die_line(text: str) -> str:
    """The one stderr line of a program that stops: `hostguard: TEXT`, redacted."""
    return f"hostguard: {redact(text)}"


def end(status: int) -> None:
    """Ends a program with STATUS, its output flushed, without the
    interpreter's teardown (a sixth of a quiet monitor run): every file a run
    writes is closed or committed by then, and SQLite's journal survives a
    process ending at any point (the spool's design: kill -9 safe)."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib is one import more on every quiet run
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
