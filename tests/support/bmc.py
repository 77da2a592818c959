"""Real BMC emulators on loopback, for the power drivers' tests (`make bmc` installs them).

    with RedfishEmulator(tmp_path, systems=[...]) as bmc: ...   # sushy-tools' sushy-emulator, fake driver,
                                                               # HTTPS with a test CA, htpasswd basic auth
    with IpmiSimulator(tmp_path) as bmc: ...                   # OpenIPMI's ipmi_sim, IPMI 2.0 lanplus
    with Libvirtd(tmp_path): ... LibvirtDomain(...)             # libvirtd's system instance, and a QEMU VM in it

Each is one process, started once per test module by its fixture; both are skipped, with the command that
installs them, when missing.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
SUSHY = ROOT / ".venv" / "tools" / "sushy-tools" / "bin"
LIBVIRT_URI = "qemu:///system"
USER = "admin"
PASSWORD = "bmc-s3cret-pass"


def missing_redfish() -> str | None:
    """Why the Redfish emulator cannot run here, or None."""
    return None if (SUSHY / "sushy-emulator").exists() else "sushy-tools is not installed (make bmc)"


def missing_ipmi() -> str | None:
    """Why the IPMI simulator cannot run here, or None."""
    absent = [tool for tool in ("ipmi_sim", "ipmitool") if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not installed (make bmc)" if absent else None


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(directory: Path, host: str = "127.0.0.1") -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for `host` signed by it: (ca.pem, server.pem, server.key)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, server_key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lablease test BMC CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])).issuer_name(ca_name)
              .public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
              .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(_pem(server_key))
    return paths


class _Process:
    """One emulator process in its own process group, killed with it on exit."""

    process: subprocess.Popen | None = None
    name = ""

    def _start(self, argv: list[str], log: Path, env: dict | None = None) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, env={**os.environ, **(env or {})})

    def _wait_until(self, ready, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} did not {what}: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class RedfishEmulator(_Process):
    """sushy-emulator with its fake systems driver (no libvirt), over HTTPS with basic auth.

    `systems` are the fake driver's systems (uuid, name, power_state); like a real BMC it applies a
    power action a few seconds after accepting it (1 to 11 s, its own random delay).
    """

    name = "sushy-emulator"

    def __init__(self, directory: Path, systems: list[dict] | None = None, domains: list[str] | None = None):
        """`systems` for its fake driver, or `domains` (libvirt UUIDs, the only ones it shows) for its libvirt one."""
        self.directory = directory
        self.systems = systems
        self.domains = domains

    def start(self) -> "RedfishEmulator":
        directory = self.directory
        directory.mkdir(parents=True, exist_ok=True)
        self.ca, cert, key = make_ca(directory / "tls")
        users = directory / "htpasswd"
        digest = subprocess.run([str(SUSHY / "python"), "-c", "import bcrypt, sys; print(bcrypt.hashpw("
                                 "sys.argv[1].encode(), bcrypt.gensalt(rounds=4)).decode())", PASSWORD],
                                check=True, capture_output=True, text=True).stdout.strip()
        users.write_text(f"{USER}:{digest}\n")
        (directory / "state").mkdir(exist_ok=True)
        if self.domains is None:
            systems = [{"external_notifier": False, "nics": [], **system} for system in self.systems]
            backend = f"SUSHY_EMULATOR_FAKE_DRIVER = True\nSUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
        else:
            backend = (f"SUSHY_EMULATOR_LIBVIRT_URI = {LIBVIRT_URI!r}\n"
                       f"SUSHY_EMULATOR_ALLOWED_INSTANCES = {self.domains!r}\n")
        config = directory / "emulator.conf"
        config.write_text(
            f"{backend}SUSHY_EMULATOR_AUTH_FILE = {str(users)!r}\nSUSHY_EMULATOR_STATE_DIR = {str(directory / 'state')!r}\n"
            f"SUSHY_EMULATOR_SSL_CERT = {str(cert)!r}\nSUSHY_EMULATOR_SSL_KEY = {str(key)!r}\n")
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self._start([str(SUSHY / "sushy-emulator"), "--config", str(config), "-i", "127.0.0.1", "-p", str(port)],
                    directory / "emulator.log")
        self._wait_until(self._answers, f"answer on {self.url}")
        return self

    def _answers(self) -> bool:
        try:
            return requests.get(f"{self.url}/redfish/v1/", verify=str(self.ca), timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def power_state(self, system_id: str) -> str:
        """The system's PowerState as the emulator reports it ("On"/"Off"), asked directly, not through lablease."""
        response = requests.get(f"{self.url}/redfish/v1/Systems/{system_id}", auth=(USER, PASSWORD),
                                verify=str(self.ca), timeout=10)
        response.raise_for_status()
        return response.json()["PowerState"]

    @property
    def version(self) -> str:
        return subprocess.run([str(SUSHY / "python"), "-c", "from importlib.metadata import version; "
                               "print(version('sushy-tools'))"], capture_output=True, text=True).stdout.strip()


CHASSIS = """#!/bin/sh
# ipmi_sim's chassis_control program: `chassis <mc> get power` / `chassis <mc> set power 0|1`.
# The machine's power is the file power; every change is one line of the file history. While the file
# stuck exists the machine ignores the BMC (a dead power supply): the request is accepted, nothing changes.
cd "$(dirname "$0")" || exit 1
case "$2 $3" in
  "get power") echo "power:$(cat power 2>/dev/null || echo 0)" ;;
  "set power") [ -e stuck ] || { echo "$4" > power && echo "$4" >> history; } ;;
  *) echo "unsupported: $*"; exit 1 ;;
esac
"""


class IpmiSimulator(_Process):
    """OpenIPMI's ipmi_sim: one BMC on 127.0.0.1 speaking IPMI 1.5 and 2.0 (lanplus), with one admin user.

    Its chassis power is a file the simulator's chassis_control program writes (`power`, and each
    change appended to `history`: "1" on, "0" off; a power cycle is "0" then, a second later, "1").
    """

    name = "ipmi_sim"
    CIPHER_SUITE = "3"  # ipmi_sim does not answer "Get Channel Cipher Suites"; ipmitool waits 10 s without -C

    def __init__(self, directory: Path):
        self.directory = directory

    def start(self) -> "IpmiSimulator":
        directory = self.directory
        (directory / "state").mkdir(parents=True, exist_ok=True)
        chassis = directory / "chassis"
        chassis.write_text(CHASSIS)
        chassis.chmod(0o755)
        self.port = free_udp_port()
        auths = "none md2 md5 straight"
        (directory / "lan.conf").write_text("\n".join([
            'name "lablease-test"', "set_working_mc 0x20", "  startlan 1", f"    addr 127.0.0.1 {self.port}",
            "    priv_limit admin", *(f"    allowed_auths_{level} {auths}" for level in
                                      ("callback", "user", "operator", "admin")),
            "    guid a123456789abcdefa123456789abcdef", "  endlan", f'  chassis_control "{chassis} 0x20"',
            f'  user 2 true "{USER}" "{PASSWORD}" admin 10 {auths}', ""]))
        (directory / "bmc.emu").write_text(
            "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n")
        self._start(["ipmi_sim", "-c", str(directory / "lan.conf"), "-f", str(directory / "bmc.emu"),
                     "-s", str(directory / "state"), "-n"], directory / "ipmi_sim.log")
        self._wait_until(self._answers, f"answer on UDP port {self.port}")
        return self

    def _answers(self) -> bool:
        status = subprocess.run(["ipmitool", "-I", "lanplus", "-C", self.CIPHER_SUITE, "-H", "127.0.0.1",
                                 "-p", str(self.port), "-U", USER, "-E", "-N", "1", "-R", "1", "mc", "info"],
                                env={**os.environ, "IPMI_PASSWORD": PASSWORD}, capture_output=True, timeout=10)
        return status.returncode == 0

    @property
    def power(self) -> str:
        """The chassis power as the simulated machine has it: "on" or "off"."""
        path = self.directory / "power"
        return "on" if path.exists() and path.read_text().strip() == "1" else "off"

    def stuck(self, stuck: bool) -> None:
        """From now on the machine ignores (True) or obeys (False) the BMC's power requests."""
        path = self.directory / "stuck"
        path.touch() if stuck else path.unlink(missing_ok=True)

    @property
    def history(self) -> list[str]:
        path = self.directory / "history"
        return ["on" if line == "1" else "off" for line in path.read_text().split()] if path.exists() else []

    @property
    def version(self) -> str:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "openipmi"], capture_output=True,
                              text=True).stdout


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- libvirt --------------------------------------------------------------------------------------------

def virsh(*args: str, check: bool = True, timeout: float = 60) -> str:
    result = subprocess.run(["virsh", "-c", LIBVIRT_URI, *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"virsh {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def missing_libvirt() -> str | None:
    """Why libvirtd cannot run a VM here, or None."""
    absent = [tool for tool in ("libvirtd", "virtlogd", "virsh", "qemu-system-x86_64") if shutil.which(tool) is None]
    if absent:
        return f"{' and '.join(absent)} not installed (make bmc qemu)"
    if os.geteuid() != 0:
        return "libvirtd's system instance (qemu:///system) is started by root only"
    binding = subprocess.run([str(SUSHY / "python"), "-c", "import libvirt"], capture_output=True)
    return None if binding.returncode == 0 else "sushy-tools' libvirt binding is not installed (make bmc)"


class Libvirtd:
    """libvirtd's system instance (and its virtlogd): the running one, or one started here and stopped on exit."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.started: list[Path] = []

    def answers(self) -> bool:
        return subprocess.run(["virsh", "-c", LIBVIRT_URI, "version"], capture_output=True, timeout=30).returncode == 0

    def __enter__(self) -> "Libvirtd":
        if not self.answers():
            self.directory.mkdir(parents=True, exist_ok=True)
            for daemon in ("virtlogd", "libvirtd"):
                pid_file = self.directory / f"{daemon}.pid"
                subprocess.run([daemon, "--daemon", "--pid-file", str(pid_file)], check=True, timeout=30)
                self.started.append(pid_file)
            deadline = time.monotonic() + 30
            while not self.answers():
                if time.monotonic() > deadline:
                    raise RuntimeError("libvirtd started but does not answer on qemu:///system")
                time.sleep(0.2)
        return self

    def __exit__(self, *exc) -> None:
        for pid_file in reversed(self.started):
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except (OSError, ValueError):
                pass


class LibvirtDomain:
    """A QEMU VM (TCG, never KVM) defined in libvirtd, netbooting like the qemu driver's: QEMU's user network
    answers DHCP with the lab's TFTP root and its boot.ipxe; the guest reaches the host at 10.0.2.2. Its serial
    console is written to `console`. Undefined (and destroyed) on exit."""

    def __init__(self, name: str, mac: str, tftp_root: Path, disks: list[Path], console: Path, memory_mib: int = 512):
        self.name, self.mac, self.tftp_root, self.disks, self.console = name, mac, tftp_root, disks, console
        self.memory_mib = memory_mib

    def xml(self) -> str:
        disks = "".join(
            f"<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='{disk}'/>"
            f"<target dev='vd{chr(ord('a') + index)}' bus='virtio'/><boot order='{index + 1}'/></disk>"
            for index, disk in enumerate(self.disks))
        # libvirt's own user-mode interface has no TFTP root or boot file: QEMU's -netdev is passed as is.
        # Run as root without relabelling: the test's files stay where they are and whose they are.
        return f"""<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{self.name}</name><memory unit='MiB'>{self.memory_mib}</memory><vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices>
    <emulator>{shutil.which("qemu-system-x86_64")}</emulator>{disks}
    <serial type='file'><source path='{self.console}' append='on'/><target port='0'/></serial>
    <controller type='usb' model='none'/><memballoon model='none'/>
  </devices>
  <seclabel type='static' model='dac' relabel='no'><label>+0:+0</label></seclabel>
  <qemu:commandline>
    <qemu:arg value='-netdev'/><qemu:arg value='user,id=n0,tftp={self.tftp_root},bootfile=boot.ipxe'/>
    <qemu:arg value='-device'/><qemu:arg value='virtio-net-pci,netdev=n0,mac={self.mac},bootindex=0,bus=pci.0,addr=0x10'/>
  </qemu:commandline>
</domain>
"""

    def __enter__(self) -> "LibvirtDomain":
        self.console.parent.mkdir(parents=True, exist_ok=True)
        self.tftp_root.mkdir(parents=True, exist_ok=True)
        definition = self.console.parent / f"{self.name}.xml"
        definition.write_text(self.xml())
        # The first definition after libvirtd starts probes QEMU's capabilities (it runs the emulator, once per
        # binary, cached in /var/cache/libvirt): over a minute on two busy cores, where the suite timed out.
        virsh("define", str(definition), timeout=600)
        self.uuid = virsh("domuuid", self.name)
        return self

    def state(self) -> str:
        return virsh("domstate", self.name)

    def __exit__(self, *exc) -> None:
        virsh("destroy", self.name, check=False)
        virsh("undefine", self.name, check=False)
