"""The timeline's data through the API: what the web's pool and system timelines draw."""
from datetime import timedelta

from .conftest import START, at

H = timedelta(hours=1)


def test_pool_and_system_timelines_list_bookings_and_loans_in_the_window(lab):
    lab.system("t1.lab.test")
    lab.system("t2.lab.test")
    lab.admin.post("/pools", {"name": "bench"})
    for fqdn in ("t1.lab.test", "t2.lab.test"):
        lab.admin.post("/pools/bench/systems", {"fqdn": fqdn})
    _, r = lab.alice.post("/reservations", {"system": "t1.lab.test", "duration": "2h"})
    lab.admin.post("/systems/t2.lab.test/loan", {"recipient": "bob", "duration": "1d"})
    status, pool = lab.alice.get("/pools/bench/timeline", span="1d")
    assert status == 200 and (pool["pool"], pool["page"], pool["pages"]) == ("bench", 1, 1)
    assert [(s["system"], [(b["kind"], b["what"]) for b in s["bookings"]]) for s in pool["systems"]] == [
        ("t1.lab.test", [("reservation", f"reservation {r['id']}")]), ("t2.lab.test", [("loan", "lent to bob")])]
    assert pool["systems"][0]["bookings"][0] == {"kind": "reservation", "what": f"reservation {r['id']}",
                                                      "start": at(START), "end": at(START + 2 * H),
                                                      "link": "/reservations"}
    _, later = lab.alice.get("/systems/t1.lab.test/timeline", start=at(START + 3 * H), end=at(START + 5 * H))
    assert later == {"start": at(START + 3 * H), "end": at(START + 5 * H),
                     "systems": [{"system": "t1.lab.test", "bookings": []}]}
    status, problem = lab.alice.get("/systems/t1.lab.test/timeline", start=at(START), end=at(START - H))
    assert (status, problem["detail"]) == (422, f"end: must be after start ({at(START)})")
    assert lab.alice.get("/pools/nope/timeline")[0] == 404
