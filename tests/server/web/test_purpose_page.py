"""A holder's purpose on the system page: given in the take and borrow forms, shown with the holder."""
import re


def test_the_purpose_is_asked_and_shown_with_the_holder(web, person):
    web.system("s1.lab.test")
    web.system("auto.lab.test", condition="automated")
    web.admin.post("/systems/auto.lab.test/access-policy/rules", {"permission": "loan_self", "user": "alice"})
    alice = person("alice")
    assert 'name="purpose"' in alice.page("/systems/s1.lab.test")
    alice.post("/systems/s1.lab.test/take", {"duration": "4h", "purpose": "kernel bisect",
                                             "back": "/systems/s1.lab.test"})
    bob = person("bob")
    html = bob.page("/systems/s1.lab.test")
    assert re.search(r"<dd data-purpose>kernel bisect</dd>", html)
    alice.post("/systems/auto.lab.test/borrow", {"purpose": "driver <work>", "back": "/systems/auto.lab.test"})
    assert "<span data-loan-purpose>(driver &lt;work&gt;)</span>" in bob.page("/systems/auto.lab.test")
