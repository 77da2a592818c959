"""`lablease-server system import` takes the inventory; `lablease system show` prints it."""
import yaml


def test_imported_inventory_is_shown(server, cli, tmp_path):
    path = tmp_path / "systems.yml"
    path.write_text(yaml.safe_dump({"systems": [{
        "fqdn": "inv.lab.test", "arch": "x86_64",
        "inventory": {"vendor": "HPE", "model": "ProLiant DL380", "hypervisor": None, "numa_nodes": 2,
                      "last_inventoried": "2026-02-01T10:00:00Z",
                      "cpu": {"vendor": "GenuineIntel", "processors": 16, "cores": 8, "flags": ["vmx", "avx2"]},
                      "disks": [{"size": 1000000000000, "model": "HDD 1T"}],
                      "devices": [{"bus": "pci", "driver": "ixgbe"}, {"bus": "usb", "type": "HID"}]},
    }]}))
    assert "1 added" in server.admin_cli("system", "import", str(path))
    shown = cli.ok("system", "show", "inv.lab.test").out
    for line in ("vendor", "HPE"), ("hypervisor", "bare metal"), ("cpu flags", "vmx avx2"), ("devices", "2"):
        assert any(text.startswith(f"{line[0]}:") and text.endswith(f" {line[1]}")
                   for text in shown.splitlines()), (line, shown)
    assert "GenuineIntel; 16 processors, 8 cores" in shown and "HDD 1T 1000000000000 B" in shown
    # importing again updates in place: a bad inventory is refused whole, naming the field
    path.write_text(yaml.safe_dump([{"fqdn": "inv.lab.test", "inventory": {"system_type": "Server"}}]))
    try:
        server.admin_cli("system", "import", str(path))
    except RuntimeError as error:
        assert "inventory.system_type" in str(error)
    else:
        raise AssertionError("a wrong system_type was imported")
    assert "Machine" in cli.ok("system", "show", "inv.lab.test").out
