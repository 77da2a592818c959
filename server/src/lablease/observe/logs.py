"""One line per event, as key=value or JSON (`log_format`), every line carrying its request id.

Every handler of the server and gunicorn gets the same formatter and the same
filter, which adds the request id of the request being answered (a context
variable: gevent gives each connection's greenlet its own context) and takes
out what must never reach a log: query strings (installers' URLs carry their
token in ?token=), bearer tokens and passwords.
"""
from __future__ import annotations

import json
import logging
import re
import sys
import time
from contextvars import ContextVar

REQUEST_ID: ContextVar[str] = ContextVar("lablease_request_id", default="-")

_QUERY = re.compile(r"\?[^\s'\"]*")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",;]+")
# `password=x`, `"smtp_password": "x"`, `token: x`: the value after a secret-sounding name
_PASSWORD = re.compile(r"(?i)(\w*(?:password|passwd|secret|token)\w*[\"']?\s*[=:]\s*[\"']?)[^\s'\",;&}]+")
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@/\s]+@")

# Attributes every LogRecord has: whatever else a record carries was passed in `extra=` and is a field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "request_id"}


def without_query(text: str) -> str:
    """text with every URL query removed: installers' URLs carry their token in ?token=."""
    return _QUERY.sub("?[query removed]", text)


def redact(text: str) -> str:
    """text without query strings, bearer tokens, passwords, or a URL's password."""
    text = _URL_PASSWORD.sub(r"\1[removed]@", without_query(text))
    return _PASSWORD.sub(r"\1[removed]", _BEARER.sub(r"\1[removed]", text))


class Redacting(logging.Filter):
    """Adds the request id and removes secrets from the message, the fields and any traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        # gunicorn's access line names its request itself: the request has been answered by then
        record.request_id = getattr(record, "request_id", None) or REQUEST_ID.get()
        record.msg, record.args = redact(record.getMessage()), None
        for name, value in fields(record).items():
            if isinstance(value, str):
                setattr(record, name, redact(value))
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def fields(record: logging.LogRecord) -> dict:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


def _event(record: logging.LogRecord) -> dict:
    """A record as ordered fields: the same ones in both forms."""
    event = {"time": _timestamp(record), "level": record.levelname.lower(), "logger": record.name,
             "request_id": getattr(record, "request_id", "-"), "msg": record.getMessage()}
    event.update(fields(record))
    if record.exc_text:
        event["exc"] = record.exc_text
    return event


def _quoted(value) -> str:
    text = str(value)
    if text and not any(c in text for c in ' ="\\\n\t') and text.isprintable():
        return text
    return json.dumps(text)  # one line whatever it holds: newlines and quotes escaped


class KeyValueFormatter(logging.Formatter):
    """`time=... level=info logger=lablease.api request_id=... msg="..." key=value...`"""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_quoted(value)}" for key, value in _event(record).items())


class JsonFormatter(logging.Formatter):
    """One JSON object a line (a dozen lines of json.dumps; no library needed for it)."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_event(record), default=str)


FORMATTERS = {"keyvalue": KeyValueFormatter, "json": JsonFormatter}


def dress(handler: logging.Handler, log_format: str) -> None:
    """Give a handler the site's line format and the redacting filter."""
    handler.setFormatter(FORMATTERS[log_format]())
    if not any(isinstance(f, Redacting) for f in handler.filters):
        handler.addFilter(Redacting())


def configure(log_format: str = "keyvalue", level: str = "info") -> None:
    """The process's root logger: one stderr handler in the site's format (replacing any earlier one)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    dress(handler, log_format)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("alembic").setLevel(logging.WARNING)
