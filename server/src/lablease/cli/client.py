"""`lablease`: the command-line client of a lablease server.

    main(["systems", "--json"], env={"LABLEASE_URL": ..., "LABLEASE_TOKEN": ...}, stdout=out, stderr=err)
    main(["job", "submit", "-"], env=..., stdin=io.BytesIO(b"<job>...</job>"))

main() takes its environment and streams as arguments (tests run it
in-process) and returns the exit status (client_status.ExitStatus). An
expected failure prints one line on stderr, `lablease: <reason>`; a
traceback appears only with --debug.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from typing import IO, Mapping, Sequence

from .client_commands import in_command_terms
from .client_http import DEFAULT_URL, Api, ClientError, Environment, Terminated, hide, new_request_id, sigterm_raises
from .client_parser import build_parser
from .client_status import ExitStatus
from .output import for_people

PROG = "lablease"


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
         stdout: IO[str] | None = None, stderr: IO[str] | None = None, stdin: IO | None = None) -> int:
    environment = Environment(**{k: v for k, v in (("env", env), ("stdout", stdout), ("stderr", stderr),
                                                   ("stdin", stdin)) if v is not None})
    args = parse(list(sys.argv[1:] if argv is None else argv), environment)
    if isinstance(args, int):
        return args
    secrets = tokens(args, environment)
    try:
        with sigterm_raises():
            return run(args, environment)
    except ClientError as error:
        return fail(environment, args.debug, in_command_terms(error, args), error.status, secrets)
    except BrokenPipeError:  # `lablease systems | head -1`: the reader left, nothing to say
        silence(environment.stdout)
        return ExitStatus.ERROR
    except KeyboardInterrupt:
        return fail(environment, args.debug, "interrupted", ExitStatus.INTERRUPTED, secrets)
    except Terminated:
        return fail(environment, args.debug, "terminated (SIGTERM)", ExitStatus.TERMINATED, secrets)
    except Exception as error:  # a bug: say so in one line, the traceback is for --debug
        return fail(environment, args.debug, f"internal error: {type(error).__name__}: {error} "
                    "(run with --debug for the traceback)", ExitStatus.ERROR, secrets)


def tokens(args, environment: Environment) -> list[str]:
    """The token as given and as sent, which no line this command prints may hold."""
    given = [getattr(args, "token", None), environment.env.get("LABLEASE_TOKEN")]
    return [variant for value in given if value for variant in (value, value.strip())]


def parse(argv: list[str], environment: Environment):
    """The parsed arguments, or argparse's exit status (2 for usage errors, 0 for --help)."""
    with contextlib.redirect_stdout(environment.stdout), contextlib.redirect_stderr(environment.stderr):
        try:
            return build_parser().parse_args(argv)
        except SystemExit as leaving:
            return leaving.code if isinstance(leaving.code, int) else ExitStatus.USAGE


def run(args, environment: Environment) -> int:
    url = args.url or environment.env.get("LABLEASE_URL") or DEFAULT_URL
    token = args.token or environment.env.get("LABLEASE_TOKEN") or None
    api = Api(url, token, environment.stderr if args.debug else None)
    if hasattr(args, "request_id"):  # a command that creates: known before it is sent, so a lost answer finds it
        args.request_id = api.request_id = args.request_id or new_request_id()
    args.environment = environment  # for the commands that read stdin or print as they go
    try:
        outcome = args.handler(api, args)
    except ClientError as error:
        if error.outcome is not None:
            show(environment.stdout, error.outcome, args.format)
        raise
    finally:
        api.close()
    show(environment.stdout, outcome, args.format)
    return ExitStatus.SUCCESS


def show(stream: IO[str], outcome, fmt: str | None) -> None:
    if fmt is None and outcome.message is not None:
        print(for_people(outcome.message), file=stream)
    elif outcome.data is not None:
        print(outcome.shape.render(outcome.data, fmt), file=stream)


def silence(stream: IO[str]) -> None:
    """Point a closed pipe at /dev/null so the interpreter's last flush does not complain."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def fail(environment: Environment, debug: bool, message: str, status: ExitStatus, secrets=()) -> int:
    """One line on stderr (after the traceback with --debug), never holding the token."""
    if debug:
        print(hide(traceback.format_exc(), secrets), file=environment.stderr, end="")
    print(hide(f"{PROG}: {for_people(message)}", secrets), file=environment.stderr)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
