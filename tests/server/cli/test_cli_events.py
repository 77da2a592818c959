"""The event feed through a real server process: cursors survive a restart; `lablease events` reads and follows."""
from __future__ import annotations

import json
import queue
import subprocess
import threading

import pytest
import requests

from tests.support.live import BIN, LiveServer

FQDN = "feed.lab.test"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(tmp_path_factory.mktemp("feed"), run_worker=False).start()
    try:
        server.add_user("bob")
        assert server.admin.post("/systems", json={"fqdn": FQDN, "arch": "x86_64",
                                                   "condition": "manual"}).status_code == 201
        yield server
    finally:
        server.stop()


def loan_taken_back(live) -> None:
    """An admin lends the system to bob and takes it back: bob is told (loan.returned), an event of his."""
    assert live.admin.post(f"/systems/{FQDN}/loan", json={"recipient": "bob"}).status_code == 201
    assert live.admin.delete(f"/systems/{FQDN}/loan").status_code == 204


def events(cli, *argv, user="bob"):
    result = cli("events", "--json", *argv, user=user)
    assert result.code == 0, result
    return [json.loads(line) for line in result.lines]


def test_a_cursor_survives_a_restart_and_reads_on_after_it(live, cli_for):
    cli = cli_for(live)
    loan_taken_back(live)
    [first] = events(cli)
    assert first["event"] == "loan.returned" and first["system"] == FQDN and first["user"] == "bob"
    live.stop()
    live.launch()  # the same database, a new server process
    loan_taken_back(live)
    [second] = events(cli, "--after", first["cursor"])
    assert second["event"] == "loan.returned" and second["loan"] != first["loan"]
    assert events(cli, "--after", second["cursor"]) == []
    # a stream resumes after Last-Event-ID, its ids being the cursors
    stream = requests.get(live.url + "/api/v1/events", params={"wait": "0"}, timeout=30,
                          headers={"Authorization": f"Bearer {live.tokens['bob']}", "Accept": "text/event-stream",
                                   "Last-Event-ID": first["cursor"]})
    assert stream.headers["Content-Type"].startswith("text/event-stream")
    assert f"id: {second['cursor']}\nevent: loan.returned\ndata: " in stream.text
    assert f"id: {first['cursor']}\n" not in stream.text
    refused = cli("events", "--after", "yesterday", user="bob")
    assert refused.code == 6 and "after: 'yesterday' is not a cursor" in refused.err
    # a cursor this feed never gave (kept across a database made anew or restored) would skip events unsaid
    beyond = str(int(second["cursor"]) + 1000)
    gone = cli("events", "--after", beyond, user="bob")
    assert gone.code == 1 and f"cursor {beyond} is past the newest event" in gone.err, gone
    assert "read on with --after " in gone.err and "after=" not in gone.err  # in the command's own terms
    answer = live.api("bob").get("/events", params={"after": beyond})
    assert answer.status_code == 410 and int(answer.json()["newest"]) >= int(second["cursor"]), answer.text


def test_follow_prints_each_event_as_it_comes(live, cli_for):
    cli = cli_for(live)
    start = live.api("bob").get("/events", params={"after": "now"}).json()["cursor"]
    env = {**cli.env("bob"), "PATH": str(BIN)}
    follow = subprocess.Popen([str(BIN / "lablease"), "events", "--follow", "--json", "--after", start], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in follow.stdout], daemon=True).start()
    try:
        loan_taken_back(live)
        event = json.loads(lines.get(timeout=60))
        assert event["event"] == "loan.returned" and int(event["cursor"]) > int(start)
        live.stop()  # a restart while it follows: it asks again until the server answers, missing nothing
        live.launch()
        loan_taken_back(live)
        again = json.loads(lines.get(timeout=90))
        assert again["event"] == "loan.returned" and int(again["cursor"]) > int(event["cursor"])
        assert follow.poll() is None
    finally:
        follow.terminate()
        follow.wait(10)
        follow.stdout.close()


@pytest.fixture
def cli_for():
    from .conftest import Cli

    return Cli


def test_the_event_source_plugin_reads_on_from_its_cursor_file_after_a_restart(live, tmp_path):
    """lablease.lab.events (extensions/eda) as ansible-rulebook runs it: `main(queue, args)` in an event loop."""
    import asyncio
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "extensions/eda/plugins/event_source/events.py"
    spec = importlib.util.spec_from_file_location("lablease_eda_events", path)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    cursor_file = tmp_path / "cursor"
    cursor_file.write_text(live.api("bob").get("/events", params={"after": "now"}).json()["cursor"] + "\n")

    def run(count):
        """Start the source, take `count` events from its queue, stop it (as a stopped ansible-rulebook)."""
        async def take():
            queue = asyncio.Queue()
            # the URL as the modules take it too, with the API's prefix
            args = {"url": live.url + "/api/v1/", "token": live.tokens["bob"], "cursor_file": str(cursor_file),
                    "wait": 1}
            source = asyncio.ensure_future(plugin.main(queue, args))
            try:
                return [await asyncio.wait_for(queue.get(), 60) for _ in range(count)]
            finally:
                source.cancel()
        return asyncio.run(take())

    loan_taken_back(live)
    [first] = run(1)
    assert first["event"] == "loan.returned" and cursor_file.read_text().strip() == first["cursor"]
    loan_taken_back(live)
    loan_taken_back(live)
    second, third = run(2)  # a new source: from the file, so not the first one again
    assert [second["event"], third["event"]] == ["loan.returned"] * 2
    assert int(first["cursor"]) < int(second["cursor"]) < int(third["cursor"])
    assert cursor_file.read_text().strip() == third["cursor"]
