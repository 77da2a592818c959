"""The event feed, GET /api/v1/events: what each caller sees, cursors, long polls, streams, expiry."""
import json
import threading
import time
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services.records import feed
from lablease.services.handlers import unit_of_work
from lablease.store import feed_signal
from lablease.worker.loop import run_due

from .conftest import START, Lab

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    lab.system("s1.lab.test")
    lab.system("s2.lab.test")
    return lab


def ending_soon(lab):
    """alice's and bob's reservations, each warned of its end by the worker (reservation.ending)."""
    _, mine = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    _, theirs = lab.bob.post("/reservations", {"system": "s2.lab.test", "duration": "3h"})
    run_due(lab.db, START + 2 * H, lab.settings)
    return mine, theirs


def test_each_user_reads_only_their_events_and_admins_read_all(lab):
    mine, theirs = ending_soon(lab)
    status, alice = lab.alice.get("/events")
    assert status == 200
    assert [(e["event"], e["reservation"], e["user"]) for e in alice["events"]] == [
        ("reservation.ending", mine["id"], "alice")]
    assert alice["events"][0]["system"] == "s1.lab.test" and alice["events"][0]["end"] == "2026-11-22T15:00:00Z"
    _, bob = lab.bob.get("/events")
    assert [e["reservation"] for e in bob["events"]] == [theirs["id"]]
    _, admin = lab.admin.get("/events")
    assert sorted(e["reservation"] for e in admin["events"]) == sorted([mine["id"], theirs["id"]])
    # the cursor passes over what the caller may not see: nothing more for alice from there
    _, again = lab.alice.get("/events", after=alice["cursor"])
    assert again == {"events": [], "cursor": admin["cursor"]}


def test_a_cursor_resumes_after_the_last_event_read(lab):
    ending_soon(lab)
    _, first = lab.admin.get("/events", limit=1)
    _, rest = lab.admin.get("/events", after=first["cursor"])
    assert len(first["events"]) == 1 and len(rest["events"]) == 1
    assert int(rest["events"][0]["cursor"]) > int(first["events"][0]["cursor"])
    lab.clock.advance(hours=3)
    run_due(lab.db, START + 3 * H, lab.settings)  # both reservations end: reservation.returned twice
    _, later = lab.admin.get("/events", after=rest["cursor"])
    assert [e["event"] for e in later["events"]] == ["reservation.returned", "reservation.returned"]
    _, now = lab.admin.get("/events", after="now")
    assert now == {"events": [], "cursor": later["cursor"]}


def test_a_long_poll_wakes_when_another_thread_writes_an_event(lab):
    _, start = lab.alice.get("/events", after="now")
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    signal = feed_signal.signal_for(lab.db)
    writer = threading.Thread(target=lambda: (_wait_for_waiter(signal), run_due(lab.db, START + 2 * H, lab.settings)))
    writer.start()
    began = time.monotonic()
    status, answer = lab.alice.get("/events", after=start["cursor"], wait=60)
    writer.join()
    assert status == 200 and [e["event"] for e in answer["events"]] == ["reservation.ending"]
    assert answer["events"][0]["reservation"] == r["id"]
    assert time.monotonic() - began < 30  # woken by the event, long before its wait ran out


def _wait_for_waiter(signal, timeout=30):
    """Until a request waits on the feed (so the event is written while it waits, not before)."""
    deadline = time.monotonic() + timeout
    while signal.waiting == 0:
        assert time.monotonic() < deadline, "no request came to wait"
        time.sleep(0.01)


def test_an_expired_cursor_is_gone_naming_the_oldest_kept(lab):
    ending_soon(lab)
    _, first = lab.admin.get("/events", limit=1)
    with unit_of_work(lab.db, lab.settings) as uow:
        assert feed.prune(uow, START + 30 * 24 * H, lab.settings.events_keep) == 1  # the newest stays
        uow.commit()
    _, left = lab.admin.get("/events")
    [kept] = left["events"]
    status, problem = lab.admin.get("/events", after="0")
    assert status == 410
    assert problem["oldest"] == kept["cursor"] and f"the oldest event kept is {kept['cursor']}" in problem["detail"]
    status, fine = lab.admin.get("/events", after=first["cursor"])  # just before the oldest kept: nothing lost
    assert status == 200 and fine["events"] == [kept]


@pytest.mark.parametrize("query, field", [({"after": "soon"}, "after"), ({"after": "-1"}, "after"),
                                          ({"after": ""}, "after"),
                                          ({"wait": "301"}, "wait"), ({"wait": "x"}, "wait"),
                                          ({"limit": "0"}, "limit")])
def test_bad_query_values_are_refused_naming_them(lab, query, field):
    status, problem = lab.alice.get("/events", **query)
    assert status == 422 and problem["detail"].startswith(f"{field}:")


def test_a_stream_sends_each_event_with_its_cursor_as_id_and_resumes_from_last_event_id(lab):
    mine, _ = ending_soon(lab)
    headers = {**lab.alice.headers, "Accept": "text/event-stream"}
    response = lab.client.get("/api/v1/events", query_string={"wait": "0"}, headers=headers)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    frames = [f for f in response.get_data(as_text=True).split("\n\n") if f and not f.startswith(":")]
    [frame] = frames
    lines = dict(line.split(": ", 1) for line in frame.split("\n"))
    event = json.loads(lines["data"])
    assert lines["event"] == "reservation.ending" and lines["id"] == event["cursor"]
    assert event["reservation"] == mine["id"]
    resumed = lab.client.get("/api/v1/events", query_string={"wait": "0"},
                             headers={**headers, "Last-Event-ID": lines["id"]})
    assert [f for f in resumed.get_data(as_text=True).split("\n\n") if f and not f.startswith(":")] == []
    gone = lab.client.get("/api/v1/events", headers={**headers, "Last-Event-ID": "x1"})
    assert gone.status_code == 422 and "Last-Event-ID" in gone.get_json()["detail"]


def test_a_recipe_kept_by_reservesys_is_an_event_of_its_owner(lab):
    lab.system("a.lab.test", condition="automated")
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{
        "host_requires": {"field": "hostname", "op": "=", "value": "a.lab.test"}, "reservesys": {"duration": 3600}}]}]})
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert recipe["status"] == "running", job
    assert lab.alice.patch(f"/recipes/{recipe['id']}", {"status": "completed", "result": "pass"})[0] == 200
    _, feed_answer = lab.alice.get("/events")
    [event] = [e for e in feed_answer["events"] if e["event"] == "recipe.reserved"]
    _, system = lab.alice.get("/systems/a.lab.test")
    assert event["recipe"] == recipe["id"] and event["job"] == job["id"] and event["system"] == "a.lab.test"
    assert event["reservation"] == system["reservation"]["id"] and event["end"] == system["reservation"]["end"]
    assert [e for e in lab.bob.get("/events")[1]["events"] if e["event"] == "recipe.reserved"] == []


def test_an_event_of_a_rolled_back_step_is_never_written(lab):
    """A savepoint (UnitOfWork.step, an import's row) that fails takes its events with it, as its outbox rows."""
    from lablease.services.messages import notices
    from lablease.store.tables import User

    with unit_of_work(lab.db, lab.settings) as uow:
        alice = uow.session.query(User).filter_by(name="alice").one()
        with pytest.raises(RuntimeError):
            with uow.step():
                undone = notices.Notice(alice, "loan.returned", "rolled-back", "s", "undone", {})
                notices.queue(uow, undone, START)
                raise RuntimeError("this step fails")
        notices.queue(uow, notices.Notice(alice, "loan.returned", "kept", "s", "kept", {}), START)
        uow.commit()
    _, answer = lab.alice.get("/events")
    assert [e["message"] for e in answer["events"]] == ["kept"]
