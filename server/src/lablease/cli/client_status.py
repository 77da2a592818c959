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
    USAGE = 2  # bad command line (argparse's own code), or LABLEASE_URL/the token cannot be a lablease server's
    NOT_FOUND = 3  # 404
    FORBIDDEN = 4  # 401 or 403: no, a wrong or an expired token; or the policy says no
    CONFLICT = 5  # 409: the calendar, a loan or a name is in the way
    INVALID = 6  # 422 (and 400, 413, 415): the server refused the input
    UNREACHABLE = 7  # no answer from LABLEASE_URL
    ENDED = 8  # what --wait waited for ended otherwise (a recipe ended, an installation failed, ...)
    TIMED_OUT = 9  # --timeout: the time ran out first
    LOST = 10  # the reservation acted on was already returned (a missed heartbeat, its end): the system is gone
    LIMIT = 25  # 429 from `ar create`: the limit of active advance reservations is reached (qrsub's 25)
    HUNG_UP = 129  # SIGHUP (the terminal or the ssh session that ran it went away): 128 + 1
    INTERRUPTED = 130  # Ctrl-C (SIGINT)
    TERMINATED = 143  # SIGTERM (what CI sends on cancel): 128 + 15, as a shell reports it


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


# Refusals a script must tell apart from others of the same HTTP status, by their problem type.
PROBLEM_EXIT_STATUS: dict[str, ExitStatus] = {
    "urn:lablease:problem:reservation-ended": ExitStatus.LOST,  # 409, but not "taken": yours is gone
    "urn:lablease:problem:no-such-path": ExitStatus.USAGE,  # 404 of the router: LABLEASE_URL's path is wrong
}


def http_status_to_exit_status(code: int, problem_type: str | None = None) -> ExitStatus:
    """The exit status for a failed HTTP answer (any status not in the tables is ERROR)."""
    return PROBLEM_EXIT_STATUS.get(problem_type or "") or HTTP_EXIT_STATUS.get(code, ExitStatus.ERROR)
