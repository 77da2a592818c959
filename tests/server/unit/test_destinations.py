"""The webhook destination rule (domain/destinations.py): which URLs and addresses the server may post to."""
import ipaddress

import pytest

from lablease.domain.destinations import Refused, check, literal_address, parse_networks, refusal

PUBLIC = [ipaddress.ip_address("93.184.216.34")]
LOOPBACK_ALLOWED = parse_networks(["127.0.0.1/32"])


@pytest.mark.parametrize("url, why", [
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://127.0.0.1:8042/api/v1/systems", "loopback"),
    ("http://localhost/hook", "loopback"),
    ("http://LOCALHOST./hook", "loopback"),
    ("http://api.localhost/hook", "loopback"),
    ("http://[::1]/hook", "loopback"),
    ("http://2130706433/hook", "loopback"),  # 127.0.0.1 as one decimal number
    ("http://0x7f.1/hook", "loopback"),
    ("http://017700000001/hook", "loopback"),
    ("http://0177.0.0.1/hook", "loopback"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/hook", "link-local"),
    ("http://[2002:7f00:1::]/hook", "loopback"),  # 6to4 wrapping 127.0.0.1
    ("http://10.1.2.3/hook", "private"),
    ("http://192.168.0.10/hook", "private"),
    ("http://172.16.5.4/hook", "private"),
    ("http://100.64.0.1/hook", "not globally routable"),
    ("http://[fd12::1]/hook", "unique-local"),
    ("http://[fe80::1%25eth0]/hook", "link-local"),
    ("http://224.0.0.251/hook", "multicast"),
    ("http://[ff02::1]/hook", "multicast"),
    ("http://0.0.0.0:8042/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://240.0.0.1/", "reserved"),
    ("http://user:pass@hooks.example.com/", "credentials"),
    ("http://token@hooks.example.com/", "credentials"),
    ("ftp://hooks.example.com/", "http:// or https://"),
    ("http:///nohost", "no host"),
    ("http://hooks.example.com:99999/", "not a valid URL"),
])
def test_internal_destinations_and_credentials_are_refused(url, why):
    with pytest.raises(Refused, match=why):
        check(url, PUBLIC, ())


def test_a_name_is_judged_by_every_address_it_resolves_to():
    check("https://hooks.example.com/x", PUBLIC, ())
    with pytest.raises(Refused, match="hooks.example.com is or resolves to 10.0.0.5 is a private address"):
        check("https://hooks.example.com/x", PUBLIC + [ipaddress.ip_address("10.0.0.5")], ())
    check("https://hooks.example.com/x", [], ())  # no address yet: nothing to refuse (the sender checks again)


def test_the_site_may_allow_networks_but_never_credentials():
    check("http://127.0.0.1:9/hook", [], LOOPBACK_ALLOWED)
    check("http://2130706433/hook", [], LOOPBACK_ALLOWED)
    check("http://[::ffff:127.0.0.1]/hook", [], LOOPBACK_ALLOWED)
    with pytest.raises(Refused, match="127.0.0.2 is a loopback"):
        check("http://127.0.0.2/hook", [], LOOPBACK_ALLOWED)
    with pytest.raises(Refused, match="credentials"):
        check("http://u:p@127.0.0.1/hook", [], LOOPBACK_ALLOWED)
    assert refusal(ipaddress.ip_address("10.9.8.7"), parse_networks(["10.0.0.0/8"])) is None


def test_ipv4_literals_read_like_inet_aton():
    assert str(literal_address("2130706433")) == "127.0.0.1"
    assert str(literal_address("127.1")) == "127.0.0.1"
    assert str(literal_address("0x7f.0.0.0x1")) == "127.0.0.1"
    assert str(literal_address("10.0.258")) == "10.0.1.2"
    assert literal_address("4294967296") is None  # too large for an address: a name
    assert literal_address("hooks.example.com") is None
    assert literal_address("1.2.3.4.5") is None
    assert literal_address("08.1.1.1") is None  # not octal: a name, as for inet_aton


def test_networks_are_cidr_blocks():
    assert [str(n) for n in parse_networks(["127.0.0.1", "10.1.0.0/16", "fd00::/8"])] == [
        "127.0.0.1/32", "10.1.0.0/16", "fd00::/8"]
    with pytest.raises(ValueError, match="'nonsense' is not a network in CIDR form"):
        parse_networks(["nonsense"])
