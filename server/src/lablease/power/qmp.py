"""A small client of QEMU's machine protocol (QMP) over a unix socket, in plain Python.

One session: connect, read the greeting, negotiate with `qmp_capabilities`,
then run commands; each command carries an id and its answer is the line with
that id, so asynchronous events (RESET, SHUTDOWN, ...) in between are kept in
`events` and skipped. Every read is bounded by the session's timeout.
"""
from __future__ import annotations

import json
import socket
import time
from pathlib import Path

MAX_LINE = 1 << 20  # an answer longer than this is not QEMU talking


class QmpError(Exception):
    """The socket could not be reached, timed out, closed, or a command answered with an error."""


class Qmp:
    def __init__(self, path: str | Path, timeout: float = 5.0):
        self.path = str(path)
        self.timeout = timeout
        self.events: list[dict] = []
        self.greeting: dict = {}
        self._socket: socket.socket | None = None
        self._buffer = b""
        self._ids = 0

    def __enter__(self) -> "Qmp":
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def connect(self) -> None:
        deadline = time.monotonic() + self.timeout
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket = sock
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.path)
        except OSError as error:
            self.close()
            raise QmpError(f"cannot connect to QMP socket {self.path}: {error.strerror or error}") from None
        try:
            greeting = self._read(deadline)
            if "QMP" not in greeting:
                raise QmpError(f"{self.path} is not a QMP socket (it said {_short(greeting)})")
            self.greeting = greeting["QMP"]
            self._command("qmp_capabilities", None, deadline)
        except QmpError:
            self.close()
            raise

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def execute(self, command: str, arguments: dict | None = None):
        """The command's return value; QmpError when QEMU answers with an error or not in time."""
        if self._socket is None:
            raise QmpError("QMP session is not connected")
        return self._command(command, arguments, time.monotonic() + self.timeout)

    def _command(self, command: str, arguments: dict | None, deadline: float):
        self._ids += 1
        ident = f"lablease-{self._ids}"
        message = {"execute": command, "id": ident}
        if arguments:
            message["arguments"] = arguments
        try:
            self._socket.settimeout(max(deadline - time.monotonic(), 0.001))
            self._socket.sendall(json.dumps(message).encode() + b"\n")
        except OSError as error:
            raise QmpError(f"QMP {command}: cannot send: {error.strerror or error}") from None
        while True:
            answer = self._read(deadline, command)
            if "event" in answer:
                self.events.append(answer)
                continue
            if answer.get("id") != ident:
                continue  # an answer to somebody else's command: not ours
            if "error" in answer:
                error = answer["error"]
                raise QmpError(f"QMP {command}: {error.get('class', 'Error')}: {error.get('desc', '')}".rstrip())
            return answer.get("return")

    def _read(self, deadline: float, command: str = "greeting") -> dict:
        """The next JSON line, within the deadline."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise QmpError(f"QMP {command}: no answer within {self.timeout:g} s")
            try:
                self._socket.settimeout(remaining)
                chunk = self._socket.recv(65536)
            except socket.timeout:
                raise QmpError(f"QMP {command}: no answer within {self.timeout:g} s") from None
            except OSError as error:
                raise QmpError(f"QMP {command}: {error.strerror or error}") from None
            if not chunk:
                raise QmpError(f"QMP {command}: QEMU closed the connection")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE:
                raise QmpError(f"QMP {command}: answer too long")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            raise QmpError(f"QMP {command}: not JSON: {_short(line)}") from None
        if not isinstance(answer, dict):
            raise QmpError(f"QMP {command}: not a JSON object: {_short(line)}")
        return answer


def execute(path: str | Path, command: str, arguments: dict | None = None, timeout: float = 5.0):
    """One command in a session of its own."""
    with Qmp(path, timeout) as session:
        return session.execute(command, arguments)


def _short(value) -> str:
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."
