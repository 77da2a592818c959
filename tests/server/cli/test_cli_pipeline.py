"""A CI pipeline's day with `lablease`, against a real server (with its worker) on a short keep-alive.

Polling at exactly the server's keep-alive, answers lost after a create, a pipeline cancelled while it
waits in the line, a token read from a secret file, a wrong address, a reservation lost to a missed
heartbeat: each through the real command line (in-process, or the installed script where signals matter).
"""
from __future__ import annotations

import http.server
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lablease.cli.client_status import ExitStatus
from lablease.domain.times import format_when
from tests.server.cli.conftest import Cli
from tests.server.cli.test_cli_jobs import job_xml
from tests.support.live import LiveServer

SCRIPT = Path(sys.executable).parent / "lablease"
KEEPALIVE = 1  # seconds: the server's, and the interval the CLI polls at
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("pipeline"), settings={"gunicorn_keepalive": f"{KEEPALIVE}s"}).start()
    for name in ("alice", "bob", "dave", "erin"):
        live.add_user(name)
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def cli(server) -> Cli:
    return Cli(server)


@pytest.fixture(scope="module")
def add_system(server):
    def add(fqdn: str, **fields) -> str:
        response = server.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", **fields})
        assert response.status_code == 201, response.text
        return fqdn
    return add


def held_by_bob(cli, add_system, fqdn: str) -> dict:
    add_system(fqdn)
    return json.loads(cli.ok("reserve", fqdn, "--duration", "1h", "--json", user="bob").out)


def until(check, seconds: float = 30):
    """check()'s first true value, asked every 0.1 s for at most `seconds` (a condition awaited, not a sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s")


def env_of(server, user: str, **more) -> dict:
    return {**os.environ, "LABLEASE_URL": server.url, "LABLEASE_TOKEN": server.tokens[user], **more}


# --- polling at the server's keep-alive ---------------------------------------------------------

def test_polling_at_exactly_the_keepalive_never_loses_the_connection(cli, add_system):
    held_by_bob(cli, add_system, "poll1.lab.test")
    left = cli("reserve", "poll1.lab.test", "--wait", "--block", "--timeout", "15s", "--interval", str(KEEPALIVE),
               "--duration", "1h", "--json", user="alice")
    # 15 polls, each on a connection the server closes just as it is reused: none fails (no exit 7), and
    # the timeout's exit 9 prints the waiting reservation with --json, as other commands print theirs
    assert (left.code, left.err.split(":")[1].strip()) == (ExitStatus.TIMED_OUT, "not granted after 15s"), left
    waiting = json.loads(left.out)
    assert (waiting["state"], waiting["system"]) == ("waiting", None)
    cli.ok("return", str(waiting["id"]), user="alice")


def _whole_message(peer: socket.socket) -> bytes:
    """One HTTP message read whole from `peer`: its head, then as much body as its Content-Length says (TCP
    may deliver a request's head and body apart, under load)."""
    message = b""
    while b"\r\n\r\n" not in message:
        chunk = peer.recv(65536)
        if not chunk:
            return message
        message += chunk
    head, _, body = message.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = peer.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class ClosingProxy:
    """A TCP proxy before the server that closes every kept-alive connection at the instant its next request
    arrives, as a server whose keep-alive runs out just then does: the first request of each connection is
    answered, the second is met with a reset. The race of polling at the keep-alive, every time."""

    def __init__(self, port: int):
        self.port, self.closed = port, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.port)) as upstream:
            upstream.sendall(_whole_message(client))  # a poll (a GET), or the submit's POST with its body
            client.sendall(_whole_message(upstream))
            if client.recv(65536):  # the next request on the kept-alive connection: closed under it
                self.closed += 1
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        self.listener.close()


def test_every_poll_on_a_connection_closed_under_it_is_sent_again(cli, server, add_system, tmp_path):
    held_by_bob(cli, add_system, "poll2.lab.test")
    proxy = ClosingProxy(server.port)
    env = {**cli.env("alice"), "LABLEASE_URL": proxy.url}
    try:
        left = cli("reserve", "poll2.lab.test", "--wait", "--block", "--timeout", "2s", "--interval", "0.2",
                   "--duration", "1h", "--json", env=env)
        assert left.code == ExitStatus.TIMED_OUT and "not granted after 2s" in left.err, left  # never 7
        cli.ok("return", str(json.loads(left.out)["id"]), user="alice")
        add_system("poll4.lab.test", condition="automated")  # a job could run there (else it is refused at once)
        job_file = tmp_path / "job.xml"
        job_file.write_text(job_xml("poll4.lab.test", whiteboard="bob's"))
        bobs = json.loads(cli.ok("job", "submit", str(job_file), "--json", user="bob").out)  # runs on poll4
        job_file.write_text(job_xml("poll4.lab.test", whiteboard="polled"))  # waits for bob's job to end
        submitted = cli("job", "submit", str(job_file), "--timeout", "2s", "--interval", "0.2", "--json", env=env)
        assert submitted.code == ExitStatus.TIMED_OUT, submitted
        cli.ok("job", "cancel", str(json.loads(submitted.out)["id"]))
        cli.ok("job", "cancel", str(bobs["id"]))
    finally:
        proxy.close()
    assert proxy.closed >= 10  # connections closed under a poll, each poll sent again on a fresh one


# --- a create whose answer is lost ------------------------------------------------------------

class LosingProxy:
    """A TCP proxy before the server that loses the answer to the first request starting with `prefix`: it
    passes the request on, waits for the answer to begin (the server has made the object), and resets the
    client's connection instead of answering."""

    def __init__(self, port: int, prefix: bytes):
        self.port, self.prefix, self.lost = port, prefix, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.port))
        first = client.recv(65536)
        upstream.sendall(first)
        if self.lost == 0 and first.startswith(self.prefix):
            self.lost += 1
            while upstream not in select.select([client, upstream], [], [], 30)[0]:  # the rest of the body
                upstream.sendall(client.recv(65536))
            # the answer begins: the object is made; the client's connection is closed as a reset
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
            upstream.close()
            return
        threading.Thread(target=self.copy, args=(client, upstream), daemon=True).start()
        self.copy(upstream, client)

    @staticmethod
    def copy(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self) -> None:
        self.listener.close()


def test_a_reserve_whose_answer_is_lost_is_sent_again_and_books_once(cli, server, add_system):
    add_system("lost1.lab.test")
    proxy = LosingProxy(server.port, b"POST /api/v1/reservations ")
    try:
        env = {**cli.env("alice"), "LABLEASE_URL": proxy.url}
        made = cli("reserve", "lost1.lab.test", "--duration", "1h", "--json", env=env)  # no --request-id given
    finally:
        proxy.close()
    assert proxy.lost == 1 and (made.code, made.err) == (0, ""), made
    reservation = json.loads(made.out)
    assert reservation["request_id"].startswith("lablease-")  # the command's own, sent both times
    mine = json.loads(cli.ok("reservations", "--system", "lost1.lab.test", "--json", user="alice").out)
    assert [r["id"] for r in mine] == [reservation["id"]]  # one reservation, not two (nor a 409 to itself)
    cli.ok("return", str(reservation["id"]), user="alice")


def test_a_job_submit_whose_answer_is_lost_is_sent_again_and_submits_once(cli, server, add_system, tmp_path):
    add_system("lost2.lab.test", condition="automated")
    job_file = tmp_path / "job.xml"
    job_file.write_text(job_xml("lost2.lab.test", whiteboard="lost answer"))
    proxy = LosingProxy(server.port, b"POST /api/v1/jobs")
    try:
        env = {**cli.env("alice"), "LABLEASE_URL": proxy.url}
        made = cli("job", "submit", str(job_file), "--request-id", "ci-lost-2", "--json", env=env)
    finally:
        proxy.close()
    assert proxy.lost == 1 and (made.code, made.err) == (0, ""), made
    job = json.loads(made.out)
    found = server.api("alice").get("/jobs", params={"request_id": "ci-lost-2"}).json()
    assert [j["id"] for j in found] == [job["id"]]
    cli.ok("job", "cancel", str(job["id"]), user="alice")


def test_a_create_that_never_gets_an_answer_names_its_request_id(cli):
    with socket.create_server(("127.0.0.1", 0)) as gone:  # a port nothing listens on any more
        port = gone.getsockname()[1]
    env = {**cli.env("alice"), "LABLEASE_URL": f"http://127.0.0.1:{port}"}
    failed = cli("reserve", "any.lab.test", "--json", env=env)
    assert failed.code == ExitStatus.UNREACHABLE and failed.out == ""
    request_id = failed.err.split("--request-id ")[1].split()[0]
    assert request_id.startswith("lablease-") and "answers it and never makes another" in failed.err


@pytest.mark.parametrize("prefix, command, made_by_now, named_by", [
    (b"POST /api/v1/pools ", ("pool", "create", "lostpool"), "/pools", "name"),
    (b"POST /api/v1/systems/lost3.lab.test/loan ", ("loan", "grant", "lost3.lab.test", "alice"),
     "/systems/lost3.lab.test/loans", "id"),
], ids=["pool create", "loan grant"])
def test_any_create_whose_answer_is_lost_is_sent_again_and_made_once(cli, server, add_system, prefix, command,
                                                                     made_by_now, named_by):
    if command[0] == "loan":
        add_system("lost3.lab.test")
    proxy = LosingProxy(server.port, prefix)
    try:
        env = {**cli.env("admin"), "LABLEASE_URL": proxy.url}
        made = cli(*command, "--json", env=env)  # no --request-id given: the command makes one, sent both times
    finally:
        proxy.close()
    assert proxy.lost == 1 and (made.code, made.err) == (0, ""), made
    found = server.admin.get(made_by_now).json()
    # one made, and it was the answer
    assert [entry[named_by] for entry in found] == [json.loads(made.out)[named_by]]
    again = cli(*command, "--json")  # a new command is a new request: the pool exists, the system is lent
    assert again.code == ExitStatus.CONFLICT, again


def test_a_create_sent_again_with_its_request_id_answers_the_first(cli):
    first = json.loads(cli.ok("pool", "create", "idpool", "--request-id", "ci-pool-1", "--json").out)
    assert json.loads(cli.ok("pool", "create", "idpool", "--request-id", "ci-pool-1", "--json").out) == first
    refused = cli("pool", "create", "otherpool", "--request-id", "ci-pool-1")
    assert refused.code == ExitStatus.CONFLICT and "ci-pool-1" in refused.err and "body" in refused.err
    assert cli("pool", "create", "p", "--request-id", "a\tb").code == ExitStatus.USAGE


def test_any_create_that_never_gets_an_answer_names_its_request_id(cli):
    with socket.create_server(("127.0.0.1", 0)) as gone:  # a port nothing listens on any more
        port = gone.getsockname()[1]
    env = {**cli.env("alice"), "LABLEASE_URL": f"http://127.0.0.1:{port}"}
    failed = cli("power", "any.lab.test", "on", env=env)
    assert failed.code == ExitStatus.UNREACHABLE and failed.out == ""
    request_id = failed.err.split("--request-id ")[1].split()[0]
    assert request_id.startswith("lablease-") and "answers it and never does it again" in failed.err


# --- a request_id reused with --wait --------------------------------------------------------------

def test_a_retry_with_wait_must_ask_the_same_as_the_first(cli, add_system):
    held_by_bob(cli, add_system, "again1.lab.test")
    add_system("again2.lab.test")
    first = ["reserve", "again1.lab.test", "--wait", "--duration", "1h", "--heartbeat", "10m",
             "--request-id", "ci-again", "--json"]
    queued = json.loads(cli.ok(*first, user="alice").out)
    assert json.loads(cli.ok(*first, user="alice").out)["id"] == queued["id"]  # the same request: a retry
    for change, differs in ((("--duration", "2h"), "duration (first 1h, now 2h)"),
                            (("--heartbeat", "20m"), "heartbeat (first 10m, now 20m)"),
                            (("--priority", "High"), "priority (first Normal, now High)")):
        argv = list(first)
        if change[0] in argv:
            argv[argv.index(change[0]) + 1] = change[1]
        else:
            argv += change
        refused = cli(*argv, user="alice")
        assert refused.code == ExitStatus.CONFLICT and differs in refused.err, (change, refused)
    other = cli("reserve", "again2.lab.test", *first[2:], user="alice")  # another system, --wait or not
    assert other.code == ExitStatus.CONFLICT and "system (first again1.lab.test, now again2.lab.test)" in other.err
    plain = cli("reserve", "again1.lab.test", "--duration", "1h", "--heartbeat", "10m", "--request-id", "ci-again",
                user="alice")
    assert plain.code == ExitStatus.CONFLICT and "wait (first true, now false)" in plain.err
    # granted meanwhile, it is compared all the same
    cli.ok("return", str(held_by_bob_id(cli, "again1.lab.test")), user="bob")
    until(lambda: json.loads(cli.ok(*first, user="alice").out)["state"] == "active")
    other = cli("reserve", "again2.lab.test", *first[2:], user="alice")
    assert other.code == ExitStatus.CONFLICT and "differs in system" in other.err
    cli.ok("return", str(queued["id"]), user="alice")


def held_by_bob_id(cli, fqdn: str) -> int:
    return next(r["id"] for r in json.loads(cli.ok("reservations", "--system", fqdn, "--active", "--json",
                                                    user="bob").out))


# --- a pipeline cancelled while it waits ----------------------------------------------------------

def as_in_a_terminal() -> None:
    """The command started as from a terminal or CI's job: Ctrl-C's SIGINT at its default (a test run started in
    the background of a shell ignores SIGINT, and Python keeps that for its children: they would not hear it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum, status, word", [(signal.SIGTERM, ExitStatus.TERMINATED, "terminated"),
                                                  (signal.SIGINT, ExitStatus.INTERRUPTED, "interrupted"),
                                                  (signal.SIGHUP, ExitStatus.HUNG_UP, "hung up")])
def test_a_blocking_wait_stopped_by_a_signal_leaves_the_line(cli, server, add_system, signum, status, word):
    fqdn = f"sig{signum}.lab.test"
    held = held_by_bob(cli, add_system, fqdn)
    waiting = subprocess.Popen([str(SCRIPT), "reserve", fqdn, "--wait", "--block", "--duration", "1h"],
                               env=env_of(server, "dave"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=as_in_a_terminal)
    dave = server.api("dave")  # waits only here: his one waiting reservation is this command's
    try:
        mine = until(lambda: [r for r in dave.get("/reservations").json() if r.get("state") == "waiting"])
        waiting.send_signal(signum)
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    reservation = dave.get(f"/reservations/{mine[0]['id']}").json()
    assert (waiting.returncode, reservation["state"]) == (status, "cancelled"), (out, err)
    assert err == f"lablease: {word}; reservation {reservation['id']} left the line (returned, had it been " \
                  "granted meanwhile)\n"
    cli.ok("return", str(held["id"]), user="bob")  # freed: nobody abandoned is granted it
    assert server.api("admin").get(f"/systems/{fqdn}").json().get("reservation") is None


class HoldingProxy:
    """A TCP proxy before the server that holds the first request until `release` is set (a slow answer to
    the request that joins the line), then passes everything on."""

    def __init__(self, port: int):
        self.port, self.arrived, self.release = port, threading.Event(), threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def handle(self, client: socket.socket) -> None:
        first = client.recv(65536)
        if not self.arrived.is_set():
            self.arrived.set()
            self.release.wait(30)
        upstream = socket.create_connection(("127.0.0.1", self.port))
        upstream.sendall(first)
        threading.Thread(target=LosingProxy.copy, args=(client, upstream), daemon=True).start()
        LosingProxy.copy(upstream, client)

    def close(self) -> None:
        self.listener.close()


def test_a_wait_stopped_while_it_is_being_asked_for_leaves_the_line_too(cli, server, add_system):
    held = held_by_bob(cli, add_system, "sig3.lab.test")
    proxy = HoldingProxy(server.port)
    waiting = subprocess.Popen([str(SCRIPT), "reserve", "sig3.lab.test", "--wait", "--block", "--duration", "1h"],
                               env={**env_of(server, "dave"), "LABLEASE_URL": proxy.url}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert proxy.arrived.wait(30)  # the request to join the line is on its way, its answer held
        waiting.send_signal(signal.SIGTERM)
        proxy.release.set()
        out, err = waiting.communicate(timeout=30)
    finally:
        proxy.close()
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == ExitStatus.TERMINATED and "left the line" in err, (out, err)
    mine = [r for r in server.api("dave").get("/reservations").json() if r["request_id"].startswith("lablease-")]
    assert [r["state"] for r in mine if r["id"] == int(err.split("reservation ")[1].split()[0])] == ["cancelled"]
    assert not [r for r in mine if r["state"] in ("waiting", "active")]  # nothing of it is left in the line
    cli.ok("return", str(held["id"]), user="bob")


# --- a granted wait nobody confirms; a reservation lost -----------------------------------------------

def test_a_granted_wait_nobody_confirms_is_returned_within_its_take_by_or_heartbeat(cli, server, add_system):
    took = {}
    for fqdn, option in (("take1.lab.test", "--take-by"), ("beat1.lab.test", "--heartbeat")):
        held = held_by_bob(cli, add_system, fqdn)
        queued = json.loads(cli.ok("reserve", fqdn, "--wait", "--duration", "1h", option, "10s",
                                   "--request-id", f"ci-{fqdn}", "--json", user="alice").out)
        cli.ok("return", str(held["id"]), user="bob")  # granted to alice's wait, whose job is gone
        took[fqdn] = (queued, option)
    alice = server.api("alice")
    for fqdn, (queued, option) in took.items():
        done = until(lambda: (r := alice.get(f"/reservations/{queued['id']}").json())["returned_at"] and r, 40)
        granted = done["wait"]["granted_at"]
        from lablease.timeparse import parse_time
        held_for = (parse_time(done["returned_at"], "t") - parse_time(granted, "t")).total_seconds()
        assert 10 <= held_for <= 20, (fqdn, held_for)  # its take_by or heartbeat, plus the worker's turn
        # the same pipeline retrying its blocking wait learns the system is gone: 10, not "expired before granted"
        again = cli("reserve", fqdn, "--wait", "--duration", "1h", option, "10s", "--request-id", f"ci-{fqdn}",
                    "--block", "--json", user="alice")
        assert again.code == ExitStatus.LOST == 10, again
        at = format_when(parse_time(granted, "t"))
        assert f"reservation {queued['id']} was granted {fqdn} at {at}" in again.err
        assert json.loads(again.out)["id"] == queued["id"]
        beat = cli("heartbeat", str(queued["id"]), user="alice")
        assert beat.code == ExitStatus.LOST and "was already returned" in beat.err  # not 5: "taken"


def test_a_blocking_wait_that_sees_its_grant_confirms_it(cli, server, add_system):
    """The pipeline blocking on its wait is alive when the grant comes: --take-by must not return it under the
    tests that follow (docs/cli.md's CI recipe runs them right after `reserve --block`)."""
    fqdn = "confirm1.lab.test"
    held = held_by_bob(cli, add_system, fqdn)
    waiting = subprocess.Popen([str(SCRIPT), "reserve", fqdn, "--wait", "--block", "--duration", "1h", "--take-by",
                                "5m", "--interval", "0.5", "--json"], env=env_of(server, "erin"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    erin = server.api("erin")  # waits only here
    try:
        until(lambda: [r for r in erin.get("/reservations").json() if r.get("state") == "waiting"])
        cli.ok("return", str(held["id"]), user="bob")
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, (out, err)
    printed = json.loads(out)
    now = erin.get(f"/reservations/{printed['id']}").json()
    assert (now["state"], now["system"]) == ("active", fqdn)
    assert now["wait"]["granted_at"] and now["wait"]["confirmed_at"], now["wait"]  # take_by no longer applies
    assert printed["wait"]["confirmed_at"] == now["wait"]["confirmed_at"]


def test_heartbeat_every_stops_when_the_pipelines_shell_is_gone(cli, server, add_system):
    add_system("every1.lab.test")
    reservation = json.loads(cli.ok("reserve", "every1.lab.test", "--duration", "1h", "--heartbeat", "10m",
                                    "--json", user="alice").out)
    shell = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    beating = subprocess.Popen([str(SCRIPT), "heartbeat", str(reservation["id"]), "--every", "0.5", "--while-pid",
                                str(shell.pid)], env=env_of(server, "alice"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    alice = server.api("alice")
    try:
        first = reservation["last_heartbeat"]
        until(lambda: alice.get(f"/reservations/{reservation['id']}").json()["last_heartbeat"] != first)
        shell.kill()
        shell.wait()
        out, err = beating.communicate(timeout=10)  # gone within a second of the shell
    finally:
        for process in (shell, beating):
            if process.poll() is None:
                process.kill()
    assert (beating.returncode, err) == (0, "")
    gone = cli("heartbeat", str(reservation["id"]), "--every", "60", "--while-pid", str(shell.pid), user="alice")
    assert (gone.code, gone.err) == (ExitStatus.USAGE, f"lablease: --while-pid {shell.pid}: no such process\n")
    assert f"process {shell.pid} is gone: no more heartbeats for reservation {reservation['id']}" in out
    cli.ok("return", str(reservation["id"]), user="alice")
    lost = cli("heartbeat", str(reservation["id"]), "--every", "1", user="alice")
    assert lost.code == ExitStatus.LOST


# --- a wrong address ------------------------------------------------------------------------------

class NotLablease(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_error(404)

    def log_message(self, *args):
        pass


def test_an_address_that_is_not_a_lablease_servers_is_a_configuration_error(cli, server):
    assert cli("whoami", env={**cli.env("alice"), "LABLEASE_URL": server.url + "/api/v1/"}).code == 0  # taken as is
    wrong = cli("system", "show", "m1", env={**cli.env("alice"), "LABLEASE_URL": server.url + "/lablease"})
    assert wrong.code == ExitStatus.USAGE and "has no such API path" in wrong.err and "no system" not in wrong.err
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotLablease)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        elsewhere = cli("system", "show", "m1", env={**cli.env("alice"),
                                                     "LABLEASE_URL": f"http://127.0.0.1:{other.server_port}"})
    finally:
        other.shutdown()
        other.server_close()
    assert elsewhere.code == ExitStatus.USAGE and "does not look like a lablease server" in elsewhere.err
    assert elsewhere.err.count("\n") == 1 and "<" not in elsewhere.err  # one line, no page


# --- the token is never printed -----------------------------------------------------------------

def run_module(server, args: dict, tmp_path: Path) -> str:
    """The reservation module run as Ansible runs it (its arguments in a file); its JSON output and stderr."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    module = ROOT / "plugins" / "modules" / "reservation.py"
    done = subprocess.run([sys.executable, str(module), str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT / ".collections")})
    return done.stdout + done.stderr


def test_a_token_with_a_newline_works_and_no_failure_prints_a_token(cli, server, add_system, tmp_path):
    add_system("tok1.lab.test")
    token = server.tokens["alice"]
    secret_file = token + "\n"  # as a CI secret file holds it
    trimmed = cli("whoami", "--json", env={**cli.env(None), "LABLEASE_TOKEN": secret_file})
    assert (trimmed.code, json.loads(trimmed.out)["name"]) == (0, "alice"), trimmed
    unknown = "llt_" + "x" * 40
    failures = {
        "unknown token": (["whoami"], {"LABLEASE_TOKEN": unknown + "\n"}, ExitStatus.FORBIDDEN),
        "space inside": (["whoami"], {"LABLEASE_TOKEN": token[:10] + " " + token[10:]}, ExitStatus.USAGE),
        "control inside": (["whoami"], {"LABLEASE_TOKEN": token[:10] + "\x07" + token[10:]}, ExitStatus.USAGE),
        "no such system": (["system", "show", "nope.lab.test"], {"LABLEASE_TOKEN": secret_file}, ExitStatus.NOT_FOUND),
        "refused": (["reserve", "tok1.lab.test", "--duration", "soon"], {"LABLEASE_TOKEN": secret_file},
                    ExitStatus.INVALID),
        "unreachable, debug": (["--debug", "whoami"], {"LABLEASE_TOKEN": secret_file,
                                                      "LABLEASE_URL": "http://127.0.0.1:9"}, ExitStatus.UNREACHABLE),
        "wrong address": (["whoami"], {"LABLEASE_TOKEN": secret_file, "LABLEASE_URL": server.url + "/x"},
                          ExitStatus.USAGE),
        "token option": (["whoami", "--token", unknown + "\r\n"], {}, ExitStatus.FORBIDDEN),
    }
    printed = []
    for kind, (argv, env, status) in failures.items():
        result = cli(*argv, env={**cli.env(None), **env})
        assert result.code == status, (kind, result)
        printed.append(result.out + result.err)
    for kind, args in {"unknown token": {"token": unknown + "\n"},
                       "space inside": {"token": token[:10] + " " + token[10:]},
                       "no such system": {"token": secret_file, "system": "nope.lab.test"},
                       "unreachable": {"token": secret_file, "url": "http://127.0.0.1:9", "retries": 0}}.items():
        answer = run_module(server, {"url": server.url, "system": "tok1.lab.test", **args}, tmp_path)
        assert '"failed": true' in answer, (kind, answer)
        printed.append(answer)
    printed.append(server.read_log())
    for text in printed:
        for secret in (token, unknown, token[:10], token[10:]):
            assert secret not in text, text
