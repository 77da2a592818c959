"""What the simulated machine reads from an iPXE script and a kickstart (the process itself: integration)."""
import subprocess
import sys
from pathlib import Path

import pytest

from lablease.virtual.machine import Boot, callbacks, netboot_file, parse_ipxe, without_token

SERVER = "http://lab.test:8042/api/v1/installations/7"


def test_the_netboot_file_is_named_by_the_mac_in_lower_case_with_hyphens():
    assert netboot_file(Path("/tftp"), "52:54:00:AB:CD:EF") == Path("/tftp/ipxe/52-54-00-ab-cd-ef")


@pytest.mark.parametrize("script, boot", [
    (None, Boot("none")),
    ("#!ipxe\n# lablease: boot from the local disk\nsanboot --no-describe --drive 0x80 || exit\n", Boot("local")),
    ("#!ipxe\nexit\n", Boot("local")),
    ("#!ipxe\n# lablease: install\nkernel http://d/vmlinuz initrd=initrd inst.ks=http://s/ks?token=a console=ttyS0\n"
     "initrd --name initrd http://d/initrd.img\nboot\n", Boot("install", "http://s/ks?token=a")),
    ("#!ipxe\nkernel http://d/vmlinuz ks=http://s/ks\nboot\n", Boot("install", "http://s/ks")),
    ("#!ipxe\nkernel http://d/vmlinuz quiet\nboot\n", Boot("nothing")),
    ("#!ipxe\nchain --autofree http://s/boot.ipxe || exit\n", Boot("chain", "http://s/boot.ipxe")),
    ("#!ipxe\n#sanboot --drive 0x80\necho hello\n", Boot("nothing")),
    ("", Boot("nothing")),
])
def test_an_ipxe_script_boots_what_its_first_boot_command_says(script, boot):
    assert parse_ipxe(script) == boot


KICKSTART = """
%pre
lablease_callback install_start '{server}/install_start?token=abc.DEF-1_2'
%end
%post --nochroot
lablease_callback install_done "{server}/install_done?token=xyz"; echo done
cat > /usr/local/sbin/lablease-postinstall <<'LABLEASE_EOF'
lablease_callback postinstall_done '{server}/postinstall_done?token=pqr' || exit 1
LABLEASE_EOF
%end
%onerror
curl -X POST {server}/install_fail?token=err&& true
curl -X POST {server}/install_done?token=second
%end
"""


def test_callbacks_are_found_in_kickstart_shell_code():
    assert callbacks(KICKSTART.format(server=SERVER)) == {
        "install_start": f"{SERVER}/install_start?token=abc.DEF-1_2",
        "install_done": f"{SERVER}/install_done?token=xyz",
        "postinstall_done": f"{SERVER}/postinstall_done?token=pqr",
        "install_fail": f"{SERVER}/install_fail?token=err",
    }
    assert callbacks("url --url=http://mirror/os\n") == {}


def test_the_console_log_never_shows_a_token():
    assert without_token(f"{SERVER}/install_done?token=xyz") == f"{SERVER}/install_done"


def test_the_machine_explains_itself():
    result = subprocess.run([sys.executable, "-m", "lablease.virtual", "--help"],
                            capture_output=True, text=True, check=True, timeout=30)
    assert "--tftp-root" in result.stdout and "--fail-install" in result.stdout
