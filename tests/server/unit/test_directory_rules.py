"""The directory's and Kerberos' rules (domain/directory.py): filter escaping, principals to user names."""
import pytest

from lablease.domain.directory import escape_filter_value, fill_filter, group_changes, principal_user


@pytest.mark.parametrize("value, escaped", [
    ("alice", "alice"), ("*", r"\2a"), (")(uid=*", r"\29\28uid=\2a"), ("a\x00b", r"a\00b"), ("back\\slash", r"back\5cslash"),
    (r"\2a", r"\5c2a"),  # an escape already written is escaped again: the name holds a backslash
])
def test_filter_values_are_escaped_as_rfc_4515_says(value, escaped):
    assert escape_filter_value(value) == escaped


def test_a_filter_is_filled_with_escaped_values_and_braces_in_a_value_stay_text():
    assert fill_filter("(uid={username})", username="*") == r"(uid=\2a)"
    assert fill_filter("(|(member={dn})(memberUid={username}))", username="{dn}", dn="uid=a,dc=x") == (
        "(|(member=uid=a,dc=x)(memberUid={dn}))")


def test_group_changes_join_and_leave_only_what_differs():
    assert group_changes({"a", "b"}, {"b", "c"}) == ({"c"}, {"a"})


@pytest.mark.parametrize("principal, user", [
    ("alice@EXAMPLE.COM", "alice"), ("alice@OTHER.ORG", None), ("alice/admin@EXAMPLE.COM", None),
    ("root/admin@EXAMPLE.COM", "root"), ("@EXAMPLE.COM", None), ("bob@TRUSTED.ORG", "bob"),
])
def test_principals_map_to_users_by_the_map_then_the_realms(principal, user):
    mapped = ("root/admin@EXAMPLE.COM=root",)
    assert principal_user(principal, ("EXAMPLE.COM", "TRUSTED.ORG"), mapped) == user
