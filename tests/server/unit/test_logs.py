"""The log line forms (key=value, JSON) and what the filter takes out of every line."""
import json
import logging

import pytest

from lablease.observe.logs import REQUEST_ID, dress, redact


def line(log_format: str, message: str, *args, exc: BaseException | None = None, **extra) -> str:
    record = logging.LogRecord("lablease.api", logging.WARNING, __file__, 1, message, args,
                               (type(exc), exc, exc.__traceback__) if exc else None)
    record.__dict__.update(extra)
    handler = logging.StreamHandler()
    dress(handler, log_format)
    assert handler.filter(record)
    return handler.format(record)


def test_a_key_value_line_is_one_line_with_the_request_id_and_quoted_values():
    token = REQUEST_ID.set("req-7")
    try:
        text = line("keyvalue", 'refused "%s"\nnext', "alice", path="/api/v1/me", status=401)
    finally:
        REQUEST_ID.reset(token)
    assert "\n" not in text
    assert text.split(" ", 1)[1] == ('level=warning logger=lablease.api request_id=req-7 '
                                     'msg="refused \\"alice\\"\\nnext" path=/api/v1/me status=401')


def test_a_json_line_has_the_same_fields_and_the_traceback_without_secrets():
    try:
        raise RuntimeError("connect to postgresql://lab:hunter2@db/lablease failed")
    except RuntimeError as error:
        text = line("json", "boom", exc=error, method="GET")
    event = json.loads(text)
    assert (event["level"], event["logger"], event["request_id"], event["msg"], event["method"]) == (
        "warning", "lablease.api", "-", "boom", "GET")
    assert "RuntimeError" in event["exc"] and "hunter2" not in text and "lab:[removed]@db" in event["exc"]


@pytest.mark.parametrize("text, kept", [
    ("GET /api/v1/installations/1/kickstart?token=abc HTTP/1.1",
     "GET /api/v1/installations/1/kickstart?[query removed] HTTP/1.1"),
    ("Authorization: Bearer Zx81-secret", "Authorization: Bearer [removed]"),
    ('{"password": "pdu-s3cret", "user": "ops"}', '{"password": "[removed]", "user": "ops"}'),
    ("smtp_password=pw1 smtp_user=u", "smtp_password=[removed] smtp_user=u"),
    ("webhook_secret: s3", "webhook_secret: [removed]"),
    ("token 'ci' for alice created", "token 'ci' for alice created"),  # no value after it: nothing to take
])
def test_redaction(text, kept):
    assert redact(text) == kept
