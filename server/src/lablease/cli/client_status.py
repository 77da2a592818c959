"""Exit statuses of `lablease`, and how HTTP failures map onto them.

One number per kind of failure, so a script can tell "the system is taken"
(5) from "the server is down" (7) without parsing text. docs/cli.md lists
them; keep the two in step.
"""
from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    SUCCESS = 0
    ERROR = 1  # anything else, including server errors (5xx)
    USAGE = 2  # bad command line (argparse's own code)
    NOT_FOUND = 3  # 404
    FORBIDDEN = 4  # 401 or 403: no, a wrong or an expired token; or the policy says no
    CONFLICT = 5  # 409: the calendar, a loan or a name is in the way
    INVALID = 6  # 422 (and 400, 413, 415): the server refused the input
    UNREACHABLE = 7  # no answer from LABLEASE_URL
    ENDED = 8  # `job submit --wait`: a recipe ended before every recipe was running
    TIMED_OUT = 9  # `job submit --wait --timeout`: the time ran out first
    LIMIT = 25  # 429 from `ar create`: the limit of active advance reservations is reached (qrsub's 25)
    INTERRUPTED = 130  # Ctrl-C


HTTP_EXIT_STATUS: dict[int, ExitStatus] = {
    400: ExitStatus.INVALID,
    401: ExitStatus.FORBIDDEN,
    403: ExitStatus.FORBIDDEN,
    404: ExitStatus.NOT_FOUND,
    409: ExitStatus.CONFLICT,
    413: ExitStatus.INVALID,
    415: ExitStatus.INVALID,
    422: ExitStatus.INVALID,
}


def http_status_to_exit_status(code: int) -> ExitStatus:
    """The exit status for a failed HTTP answer (any status not in the table is ERROR)."""
    return HTTP_EXIT_STATUS.get(code, ExitStatus.ERROR)
