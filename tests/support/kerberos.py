"""A real MIT Kerberos KDC (Debian's krb5-kdc, scripts/ensure-directory.sh) with a throw-away realm, on loopback.

The suite starts one per test module: krb5.conf and kdc.conf in a temporary directory (KRB5_CONFIG and
KRB5_KDC_PROFILE point at them, for this process and the programs it starts), a database made with
kdb5_util, principals and the server's keytab made with kadmin.local, krb5kdc in the foreground. `kinit`
gets a person's ticket into a credentials cache of their own.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.directory import wait_listening
from tests.support.postgres import free_port

REALM = "LABLEASE.TEST"


def _tool(name: str) -> str:
    found = shutil.which(name) or next((f"{d}/{name}" for d in ("/usr/sbin", "/usr/bin") if Path(d, name).exists()),
                                       None)
    if found is None:
        pytest.fail(f"{name} is missing: run scripts/ensure-directory.sh (make test does)")
    return found


class Kdc:
    def __init__(self, root: Path, host: str = "127.0.0.1"):
        self.root, self.host = root, host
        self.port = free_port()
        self.env = {**os.environ, "KRB5_CONFIG": str(root / "krb5.conf"), "KRB5_KDC_PROFILE": str(root / "kdc.conf"),
                    "KRB5RCACHEDIR": str(root)}
        self.keytab = root / "http.keytab"
        self.process: subprocess.Popen | None = None

    @property
    def service(self) -> str:
        return f"HTTP/{self.host}@{REALM}"

    def configure(self, people: dict[str, str]) -> None:
        root = self.root
        # clockskew 1: an expired ticket is refused a second after it ends, not five minutes (the default)
        (root / "krb5.conf").write_text(
            f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
            f" rdns = false\n dns_canonicalize_hostname = false\n clockskew = 1\n udp_preference_limit = 1\n"
            f"[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n")
        (root / "kdc.conf").write_text(
            f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            f"[realms]\n {REALM} = {{\n  database_name = {root}/principal\n  key_stash_file = {root}/stash\n"
            f"  acl_file = {root}/kadm5.acl\n  max_life = 1h\n }}\n"
            f"[logging]\n kdc = FILE:{root}/kdc.log\n")
        (root / "kadm5.acl").write_text("")
        self.run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "throw-away master key")
        commands = [f"addprinc -pw {password!r} {name}" for name, password in people.items()]
        commands += [f"addprinc -randkey {self.service}", f"ktadd -k {self.keytab} {self.service}",
                     f"addprinc -randkey HTTP/another.service.test@{REALM}"]
        for command in commands:
            self.run(_tool("kadmin.local"), "-r", REALM, "-q", command)

    def run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(args, env=self.env, check=True, capture_output=True, text=True, timeout=60, **kw)

    def start(self) -> None:
        log = open(self.root / "krb5kdc.out", "ab")
        self.process = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", REALM], env=self.env, stdout=log, stderr=log)
        log.close()
        wait_listening(self.process, self.port, self.root / "krb5kdc.out", "krb5kdc")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def kinit(self, name: str, password: str, lifetime: str = "10m") -> dict:
        """A ticket for `name` in a cache of their own; returns the environment that uses it."""
        cache = self.root / f"ccache-{name}-{time.monotonic_ns()}"
        env = {**self.env, "KRB5CCNAME": f"FILE:{cache}"}
        subprocess.run([_tool("kinit"), "-l", lifetime, name], env=env, input=password + "\n", text=True,
                       check=True, capture_output=True, timeout=30)
        return env


def start_kdc(tmp_path_factory, people: dict[str, str]) -> Kdc:
    kdc = Kdc(tmp_path_factory.mktemp("kdc"))
    kdc.configure(people)
    kdc.start()
    return kdc
