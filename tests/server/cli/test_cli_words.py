"""What `lablease` tells a person: the command line's words (its options, not the API's fields or query
strings), and what a reservation that has no system yet waits for — never `None` or `-`."""
from __future__ import annotations

import json


def test_a_refusal_forced_by_an_option_names_the_option(cli, add_system):
    add_system("words1.lab.test", condition="manual")
    held = json.loads(cli.ok("reserve", "words1.lab.test", "--duration", "2h", "--json", user="carol").out)
    refused = cli("loan", "grant", "words1.lab.test", "bob")
    assert refused.code == 5 and "force=true" not in refused.err, refused.err
    assert refused.err.endswith(f"(reservation {held['id']}), so bob could not use the loan; lend with --force to "
                                "return it (its holder is told)\n"), refused.err


def test_a_refusal_names_the_option_not_the_apis_field(cli, add_system):
    add_system("words2.lab.test", condition="automated")
    cli.ok("loan", "grant", "words2.lab.test", "bob")  # no end
    refused = cli("loan", "extend", "words2.lab.test", "--by", "1d")
    assert (refused.code, refused.err) == (6, "lablease: --by: the loan has no end to extend\n")  # not extend_by


def test_a_waiting_reservation_says_what_it_waits_for_and_leaving_the_queue_says_so(cli, add_system):
    add_system("words3.lab.test")
    held = json.loads(cli.ok("reserve", "words3.lab.test", "--duration", "1h", "--json", user="bob").out)
    queued = json.loads(cli.ok("reserve", "words3.lab.test", "--wait", "--duration", "2h", "--json",
                               user="carol").out)
    assert queued["state"] == "waiting" and queued["waits_for"] == "system words3.lab.test"
    [row] = [line for line in cli.ok("reservations", user="carol").lines if line.split()[0] == str(queued["id"])]
    assert "(waits for system words3.lab.test)" in row and row.rstrip().endswith("2h once granted"), row
    assert " - " not in row and "no limit" not in row
    shown = cli.ok("reservations", user="carol").out
    left = cli.ok("return", str(queued["id"]), user="carol")
    assert left.out == f"reservation {queued['id']} left the queue; it no longer waits for system words3.lab.test\n"
    assert "None" not in left.out + shown
    [row] = [line for line in cli.ok("reservations", user="carol").lines if line.split()[0] == str(queued["id"])]
    assert "(waited for system words3.lab.test)" in row and "cancelled" in row and "never granted" in row, row
    assert "no limit" not in row
    cli.ok("return", str(held["id"]), user="bob")
