"""The serving stack itself (gunicorn, its logs, the background worker's settings), through real servers."""
import socket
import threading
import time

import pytest
import requests

from tests.e2e.test_provisioning_e2e import TREE, add_virtual, wait_for
from tests.support.live import LiveServer

LIMIT = 64 * 1024


@pytest.fixture
def server(tmp_path):
    live = LiveServer(tmp_path / "data", settings={"max_body_bytes": LIMIT, "log_level": "debug"},
                      serve_args=("--access-log", "-")).start()
    yield live
    live.stop()


def chunks(*parts: bytes):
    """A generator body: requests sends it with Transfer-Encoding: chunked, no Content-Length."""
    yield from parts


def test_chunked_bodies_are_read_whole_within_the_limit(server):
    response = server.admin.post("/groups", data=chunks(b'{"name": "chunked", ', b'"description": "', b"x" * 30000,
                                                        b'"}'), headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.request.headers.get("Transfer-Encoding") == "chunked"
    assert server.admin.get("/groups/chunked").json()["description"] == "x" * 30000
    # an Automated system the job could run on (a job no system could ever run is refused with 409)
    assert server.admin.post("/systems", json={"fqdn": "chunked.lab.test", "arch": "x86_64",
                                               "condition": "automated"}).status_code == 201
    job = b"<job><recipeSet><recipe><hostRequires/></recipe></recipeSet></job>"
    response = server.admin.post("/jobs", data=chunks(job[:9], job[9:]), headers={"Content-Type": "application/xml"})
    assert response.status_code == 201, response.text


def test_a_chunked_body_over_the_limit_is_413_naming_the_limit(server):
    too_big = chunks(b'{"name": "big", "description": "', *[b"y" * 4096] * 20, b'"}')
    response = server.admin.post("/groups", data=too_big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.headers["Content-Type"] == "application/problem+json"
    assert f"limit of {LIMIT} bytes (max_body_bytes)" in response.json()["detail"]
    assert server.admin.get("/groups/big").status_code == 404
    # with a Content-Length too
    response = server.admin.post("/groups", json={"name": "big", "description": "y" * LIMIT})
    assert response.status_code == 413 and f"limit of {LIMIT} bytes" in response.json()["detail"]


def raw_request(server, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(data)
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
        return answer


def test_no_log_of_the_server_records_a_query_string(server):
    """Installers' URLs carry their token in ?token=: neither gunicorn's error log nor the access log keep it."""
    anonymous = server.api()
    assert anonymous.get("/installations/1/kickstart?token=SECRET-A").status_code == 403
    assert anonymous.post("/installations/1/install_start?token=SECRET-B").status_code == 403
    # requests gunicorn itself refuses, which its error log reports with their request line
    assert raw_request(server, b"GET /api/v1/installations/1/kickstart?token=SECRET-C\r\n\r\n").startswith(
        b"HTTP/1.1 400")
    assert raw_request(server, b"GET /api/v1/installations/1/kickstart?token=SECRET-D HTTP/1.1 x\r\n\r\n").startswith(
        b"HTTP/1.1 400")
    assert server.admin.get("/me").status_code == 200  # a request after them all: every line above is written
    wait_for("gunicorn's report of the bad request line", lambda: "Invalid HTTP request line" in server.read_log())
    log = server.read_log()
    assert "kickstart?[query removed]" in log  # the line is reported, without its query
    assert "method=GET path=/api/v1/installations/1/kickstart status=403" in log  # the access log: the path only
    assert "SECRET" not in log


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    """A slow client: one header line a second, never the blank line that ends them."""
    try:
        while not stop.wait(1):
            conn.sendall(b"X-Slow: 1\r\n")
    except OSError:
        pass


def test_slow_clients_cannot_starve_the_others(tmp_path):
    server = LiveServer(tmp_path / "data", run_worker=False).start()
    stop = threading.Event()
    slow = []
    try:
        for _ in range(16):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: lablease\r\n")
            slow.append(conn)
            threading.Thread(target=trickle, args=(conn, stop), daemon=True).start()
        took = []
        for _ in range(20):
            started = time.monotonic()
            response = requests.get(server.url + "/health", timeout=10)  # a new connection each time
            took.append(time.monotonic() - started)
            assert response.status_code == 200
        assert max(took) < 1.0, [round(t, 2) for t in took]  # the latency bound the issue asks for
        # nor are they kept for ever: one whose headers never end is hung up on (gunicorn_keepalive, 7 s)
        slow[0].settimeout(30)
        try:
            hung_up = slow[0].recv(4096) == b""
        except ConnectionResetError:
            hung_up = True
        assert hung_up
    finally:
        stop.set()
        for conn in slow:
            conn.close()
        server.stop()


def test_serve_listen_is_the_address_the_worker_writes_into_installs(tmp_path):
    server = LiveServer(tmp_path / "data", settings={"install_timeout": "60s", "command_retry_delay": "1s"},
                        listen_by_option=True).start()
    try:
        assert server.env["LABLEASE_LISTEN"] != f"127.0.0.1:{server.port}"  # the environment names another port
        add_virtual(server, "vm1.lab.test", "52:54:00:e2:e1:01")
        assert server.admin.post("/distro-trees", json=TREE).status_code == 201
        alice = server.add_user("alice")
        assert alice.post("/reservations", json={"system": "vm1.lab.test", "duration": "2h"}).status_code == 201
        response = alice.post("/systems/vm1.lab.test/provision", json={"distro_tree": "Fedora-40"})
        assert response.status_code == 202, response.text
        install = response.json()
        assert install["kickstart_url"].startswith(f"http://127.0.0.1:{server.port}/api/v1/installations/")
        # the worker wrote the netboot config; the machine booted it, fetched its kickstart and called back
        done = wait_for("the installation to run", lambda: (
            lambda i: i if i["status"] in ("running", "failed") else None)(
            alice.get(f"/installations/{install['id']}").json()))
        assert done["status"] == "running", done
        console = (server.data_dir / "virtual" / "vm1.lab.test" / "console.log").read_text()
        assert f"127.0.0.1:{server.port}/api/v1/installations/{install['id']}/kickstart" in console
    finally:
        server.stop()
