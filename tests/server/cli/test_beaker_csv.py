"""`lablease-server import beaker-csv` and `export beaker-csv`: the CSV files Beaker's Admin -> Export writes
(tests/server/cli/beaker_csv, in its format) imported by the real CLI into a fresh server and checked through
its API; an export imported back changes nothing; bad rows are named by file and line, nothing imported."""
import csv
from pathlib import Path

import pytest

from tests.server.cli.test_server_cli import run
from tests.support.live import LiveServer

FIXTURES = Path(__file__).resolve().parent / "beaker_csv"
FILES = [str(FIXTURES / f"{kind}.csv") for kind in
         ("user_group", "system_pool", "power", "keyvalue", "labinfo", "exclude", "system")]  # systems last
REFUSED = 1


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("beaker"), run_worker=False).start()
    live.add_user("bob")
    live.add_user("carol")
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def imported(lab):
    return run(lab, "import", "beaker-csv", *FILES)


def rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_beakers_files_are_imported_and_what_lablease_does_not_keep_is_named(lab, imported):
    assert imported.returncode == 0, imported.stderr
    out = imported.stdout.splitlines()
    assert out[0].endswith(": 3 system(s) added, 0 updated; 2 pool and 2 group membership(s) changed")
    assert out[1] == "not imported (5; lablease keeps no such data):"
    notes = "\n".join(out[2:])
    for said in ("power.csv:4: bkr3.lab.test's power type apc_snmp: lablease has no such driver",
                 "labinfo.csv:2: lab info (cost, dimensions, weight, wattage, cooling): lablease keeps none",
                 "exclude.csv:2: an excluded family", "system.csv:3: bkr2.lab.test's cc (qe@lab.test)",
                 "system.csv:3: bkr2.lab.test has several arches in Beaker (x86_64, i386): lablease keeps one per "
                 "system, the first (x86_64)"):
        assert said in notes, notes
    one = lab.admin.get("/systems/bkr1.lab.test").json()
    assert (one["arch"], one["memory_mb"], one["lab"], one["owner"], one["condition"]) == (
        "x86_64", 8192, "lab-a.lab.test", "bob", "automated")
    assert one["netboot"]["mac"] == "52:54:00:aa:00:01"
    assert {k: one["inventory"][k] for k in ("vendor", "model", "serial", "location", "lender", "system_type")} == {
        "vendor": "Dell Inc.", "model": "PowerEdge R640", "serial": "SN-001", "location": "Rack 1, Lab 2",
        "lender": "QE", "system_type": "Machine"}
    assert one["attributes"] == {"NETWORK": ["10G"], "HVM": ["1"]}  # 1G added, then deleted
    assert (one["power"]["driver"], one["power"]["address"], one["power"]["user"]) == (
        "ipmitool", "bmc-bkr1.lab.test", "root")
    two = lab.admin.get("/systems/bkr2.lab.test").json()
    assert (two["arch"], two["owner"], two["condition"], two["inventory"]["location"]) == (
        "x86_64", "carol", "manual", 'Rack "B", Lab 2')
    assert two["power"] == {"driver": "libvirt", "address": "bkr2", "uri": "qemu+ssh://virthost.lab.test/system"}
    three = lab.admin.get("/systems/bkr3.lab.test").json()
    assert (three["arch"], three["condition"], three["inventory"]["system_type"], three["power"]) == (
        "ppc64le", "broken", "Resource", {})
    pool = lab.admin.get("/pools/beaker-migrated").json()
    assert sorted(pool["systems"]) == ["bkr1.lab.test", "bkr2.lab.test"]
    group = lab.admin.get("/groups/kernel-qe").json()
    assert sorted(group["members"]) == ["bob", "carol"]


def test_an_export_keeps_what_lablease_models_and_imports_back_unchanged(lab, imported, tmp_path):
    assert imported.returncode == 0, imported.stderr
    first = run(lab, "export", "beaker-csv", str(tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    assert f"wrote {tmp_path / 'one' / 'system.csv'}: 3 row(s)" in first.stdout
    exported = rows(tmp_path / "one" / "system.csv")
    wanted = rows(FIXTURES / "system.csv")
    wanted[0]["mac_address"] = "52:54:00:aa:00:01"  # the one spelling lablease keeps
    wanted[1].update(arch="x86_64", cc="")  # one arch per system, no cc list
    assert exported == wanted
    assert rows(tmp_path / "one" / "power.csv") == rows(FIXTURES / "power.csv")[:2]  # apc_snmp was not imported
    assert rows(tmp_path / "one" / "keyvalue.csv") == [
        {"csv_type": "keyvalue", "fqdn": "bkr1.lab.test", "key": key, "key_value": value, "deleted": "False"}
        for key, value in (("HVM", "1"), ("NETWORK", "10G"))]
    assert rows(tmp_path / "one" / "system_pool.csv") == rows(FIXTURES / "system_pool.csv")
    members = rows(tmp_path / "one" / "user_group.csv")
    assert [row for row in members if row["group"] == "kernel-qe"] == rows(FIXTURES / "user_group.csv")
    assert {"csv_type": "user_group", "user": "admin", "group": "arusers", "deleted": "False"} in members
    assert (tmp_path / "one" / "power.csv").stat().st_mode & 0o777 == 0o600  # it holds BMC passwords

    again = run(lab, "import", "beaker-csv", *sorted(str(p) for p in (tmp_path / "one").glob("*.csv")))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].endswith(": 0 system(s) added, 3 updated; 0 pool and 0 group "
                                                 "membership(s) changed")
    assert run(lab, "export", "beaker-csv", str(tmp_path / "two")).returncode == 0
    for path in (tmp_path / "one").glob("*.csv"):
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes(), path.name


def test_bad_rows_are_named_by_line_and_nothing_is_imported(lab, imported, tmp_path):
    assert imported.returncode == 0, imported.stderr
    systems = tmp_path / "systems.csv"
    systems.write_text(
        "csv_type,fqdn,lender,location,mac_address,memory,model,serial,vendor,arch,lab_controller,owner,status,"
        "type,cc\n"
        "system,bkr9.lab.test,,,,,,,,x86_64,,,Manual,Machine,\n"
        "system,bkr10.lab.test,,,,,,,,ia64,,,Manual,Machine,\n"
        "system,bkr11.lab.test,,,,,,,,x86_64,,,Sleeping,Machine,\n"
        "system,bkr12.lab.test,,,52:54:00:AA:00:01,,,,,x86_64,,,Manual,Machine,\n"
        "system,bkr13.lab.test,,,,lots,,,,x86_64,,,Manual,Machine,\n"
        "system,bkr14.lab.test,,,,,,,,x86_64,,nobody,Manual,Machine,\n"
        "system,bkr15.lab.test,,,,,,,,x86_64,,,Manual\n"
        "printer,bkr16.lab.test,,,,,,,,x86_64,,,Manual,Machine,\n")
    others = tmp_path / "others.csv"
    others.write_text("csv_type,user,group,deleted\nuser_group,nobody,kernel-qe,False\nuser_group,bob,,False\n")
    result = run(lab, "import", "beaker-csv", str(systems), str(others))
    assert result.returncode == REFUSED and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"lablease-server: {systems}, {others}: nothing imported: 9 of 10 row(s) refused",
        f"{systems}:3: arch: unknown architecture 'ia64'; known: aarch64, armhfp, i386, ppc64, ppc64le, riscv64, "
        "s390x, x86_64 (an administrator adds one: lablease-server arch add NAME)",
        f"{systems}:4: status: 'Sleeping' is not one of Automated, Manual, Broken, Removed",
        f"{systems}:5: netboot MAC 52:54:00:aa:00:01 is already bkr1.lab.test's; each system needs its own "
        "(provisioning one would write the other's boot file)",
        f"{systems}:6: memory: 'lots' is not a whole number of MiB",
        f"{systems}:7: owner: no user named nobody",
        f"{systems}:8: missing fields: type, cc",
        f"{systems}:9: csv_type 'printer' is not one of system, system_id, labinfo, power, exclude, install, "
        "keyvalue, system_pool, user_group",
        f"{others}:2: user: no user named nobody",
        f"{others}:3: group: must not be empty",
    ]
    assert lab.admin.get("/systems/bkr9.lab.test").status_code == 404  # the good row neither
