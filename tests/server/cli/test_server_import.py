"""`lablease-server system import` as an administrator runs it: each system goes by the API's rules (its schema,
its use cases and their consequences); every refused system is named by file, line, position and name; a file
with any refused system writes nothing."""
from datetime import datetime, timedelta, timezone

import yaml

from tests.server.cli.test_server_cli import run

REFUSED = 1


def write(tmp_path, systems, name="systems.yml", top=True) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"systems": systems} if top else systems, sort_keys=False))
    return str(path)


def exists(server, fqdn: str) -> bool:
    return server.admin.get(f"/systems/{fqdn}").status_code == 200


def test_every_refused_system_is_named_and_nothing_is_written(server, add_system, tmp_path):
    add_system("imp0.lab.test", netboot={"mac": "52:54:00:cc:00:01"})
    path = tmp_path / "systems.yml"
    path.write_text("""\
systems:
  - {fqdn: imp1.lab.test, arch: x86_64, memory: 4096}
  - {fqdn: imp2.lab.test, arch: x86_64, netboot: {mac: "52:54:00:CC:00:02"}}
  - {fqdn: imp3.lab.test, arch: x86_64, colour: red}
  - {fqdn: IMP2.lab.test, arch: aarch64}
  - fqdn: imp4.lab.test
    arch: x86_64
    netboot: {mac: 525400cc0002}
  - fqdn: imp5.lab.test
    arch: x86_64
    netboot:
      mac: 52-54-00-cc-00-01
  - {fqdn: imp6.lab.test}
  - imp7.lab.test
  - {fqdn: imp8.lab.test, arch: x86_64, cpus: -1}
  - {fqdn: imp9.lab.test, arch: x86_64, condition: automated}
""")
    result = run(server, "system", "import", str(path))
    assert result.returncode == REFUSED and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"lablease-server: {path}: nothing imported: 8 of 10 system(s) refused",
        f"{path}:2: system 1 (imp1.lab.test): unknown field 'memory'; did you mean 'memory_mb'?",
        f"{path}:4: system 3 (imp3.lab.test): unknown field 'colour'",
        f"{path}:5: system 4 (IMP2.lab.test): imp2.lab.test is also system 2 of this import; give each system once",
        f"{path}:6: system 5 (imp4.lab.test): netboot MAC 52:54:00:cc:00:02 is already imp2.lab.test's; each system "
        "needs its own (provisioning one would write the other's boot file)",
        f"{path}:9: system 6 (imp5.lab.test): netboot MAC 52:54:00:cc:00:01 is already imp0.lab.test's; each system "
        "needs its own (provisioning one would write the other's boot file)",
        f"{path}:13: system 7 (imp6.lab.test): arch: is required",
        f"{path}:14: system 8: system: must be a mapping of its fields (fqdn, arch, ...)",
        f"{path}:15: system 9 (imp8.lab.test): cpus: -1 is less than the minimum of 1",
    ]
    assert not any(exists(server, f"imp{n}.lab.test") for n in range(1, 10))  # the good ones neither


def test_a_file_that_is_not_a_list_of_systems_is_one_line(server, tmp_path):
    cases = {
        "broken.yml": ("systems:\n  - fqdn: a.lab.test\n   arch: x86_64\n",
                       "not valid YAML: expected <block end>, but found '<block mapping start>' (line 3, column 4)"),
        "typo.yml": ("sytems:\n  - fqdn: a.lab.test\n",
                     "unknown key 'sytems'; the file holds a list of systems, at the top or under systems:"),
        "empty.yml": ("", "holds no systems (a list of them, at the top or under systems:)"),
    }
    for name, (text, reason) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = run(server, "system", "import", str(path))
        assert result.returncode == REFUSED and "Traceback" not in result.stderr
        assert result.stderr.splitlines() == [f"lablease-server: {path}: {reason}" + (
            "; nothing imported" if name == "broken.yml" else "")], result.stderr


def test_a_good_file_is_imported_whole_in_the_one_spelling(server, tmp_path):
    path = write(tmp_path, [
        {"fqdn": "good1.lab.test", "arch": "x86_64", "memory_mb": 2048, "netboot": {"mac": "52-54-00-DD-00-01"}},
        {"fqdn": "good2.lab.test", "arch": "s390x"},
    ], top=False)
    result = run(server, "system", "import", path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"imported {path}: 2 added, 0 updated\n"
    assert server.admin.get("/systems/good1.lab.test").json()["netboot"] == {"mac": "52:54:00:dd:00:01"}
    path = write(tmp_path, [{"fqdn": "good2.lab.test", "cpus": 8}], "again.yml")
    assert run(server, "system", "import", path).stdout == f"imported {path}: 0 added, 1 updated\n"
    assert server.admin.get("/systems/good2.lab.test").json()["cpus"] == 8


def test_an_unquoted_mac_of_digits_is_the_mac_written(server, tmp_path):
    """YAML 1.1 reads 52:54:00:12:34:56 unquoted as a base-60 number; an administrator means the MAC."""
    path = tmp_path / "digits.yml"
    path.write_text("- fqdn: digits1.lab.test\n  arch: x86_64\n  cpus: 4\n  netboot: {mac: 52:54:00:12:34:56}\n")
    result = run(server, "system", "import", str(path))
    assert result.returncode == 0, result.stderr
    shown = server.admin.get("/systems/digits1.lab.test").json()
    assert (shown["netboot"], shown["cpus"]) == ({"mac": "52:54:00:12:34:56"}, 4)


def test_removing_a_held_and_lent_system_by_import_is_refused_unless_forced(server, add_system, tmp_path):
    """As PATCH condition=removed: refused naming the reservation and the loan; --force returns both."""
    add_system("held1.lab.test")
    bob = server.api("bob")
    assert server.admin.post("/systems/held1.lab.test/loan", json={"recipient": "bob"}).status_code == 201
    reservation = bob.post("/reservations", json={"system": "held1.lab.test", "duration": "2h"}).json()
    path = write(tmp_path, [{"fqdn": "held1.lab.test", "condition": "removed"}])
    result = run(server, "system", "import", path)
    assert result.returncode == REFUSED
    assert result.stderr.splitlines()[1] == (
        f"{path}:2: system 1 (held1.lab.test): held1.lab.test has reservation {reservation['id']} of bob and a loan "
        "to bob; remove it with force to return them")
    assert bob.get(f"/reservations/{reservation['id']}").json()["state"] == "active"
    assert server.admin.get("/systems/held1.lab.test").json()["condition"] == "manual"

    result = run(server, "system", "import", path, "--force")
    assert result.returncode == 0, result.stderr
    assert bob.get(f"/reservations/{reservation['id']}").json()["state"] == "returned"
    assert bob.get("/systems/held1.lab.test/loan").status_code == 404
    assert bob.patch("/systems/held1.lab.test/loan", json={"extend_by": "1d"}).status_code == 404
    assert bob.patch(f"/reservations/{reservation['id']}", json={"extend_by": "1h"}).status_code == 409


def test_an_import_that_would_break_an_advance_reservation_is_refused_unless_forced(server, add_system, tmp_path):
    add_system("arheld1.lab.test")
    start = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    answer = server.admin.post("/advance-reservations", json={"hosts": ["arheld1.lab.test"], "start": start,
                                                               "duration": "2h"})
    assert answer.status_code == 201, answer.text
    ar = answer.json()
    path = write(tmp_path, [{"fqdn": "arheld1.lab.test", "condition": "removed"}])
    result = run(server, "system", "import", path)
    assert result.returncode == REFUSED
    assert f"{path}:2: system 1 (arheld1.lab.test): this would break advance reservation {ar['id']}" in result.stderr
    assert server.admin.get(f"/advance-reservations/{ar['id']}").json()["state"] == "w"
    assert run(server, "system", "import", path, "--force").returncode == 0
    assert server.admin.get(f"/advance-reservations/{ar['id']}").json()["state"] == "E"


def test_system_add_keeps_one_spelling_of_a_mac_and_refuses_a_shared_one(server):
    result = run(server, "system", "add", "mac1.lab.test", "--arch", "x86_64", "--mac", "52-54-00-FF-00-01")
    assert result.returncode == 0, result.stderr
    assert server.admin.get("/systems/mac1.lab.test").json()["netboot"] == {"mac": "52:54:00:ff:00:01"}
    result = run(server, "system", "add", "mac2.lab.test", "--arch", "x86_64", "--mac", "525400ff0001")
    assert result.returncode == REFUSED and result.stderr == (
        "lablease-server: netboot MAC 52:54:00:ff:00:01 is already mac1.lab.test's; each system needs its own "
        "(provisioning one would write the other's boot file)\n")
    assert not exists(server, "mac2.lab.test")
