"""A real OpenLDAP slapd (Debian's, scripts/ensure-directory.sh) with a throw-away database, on loopback.

The suite starts one per test module (a module-scoped fixture): its own slapd.conf in a temporary
directory, the people and groups of PEOPLE/GROUPS loaded with slapadd, ldap:// with StartTLS offered under a
test CA made here (tests.support.tls). Tests change the directory as its administrator would (`admin()`).
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from lablease.services.auth.directory import load_ldap3

from tests.support.postgres import free_port
from tests.support.tls import TestCA

SUFFIX = "dc=example,dc=test"
ADMIN_DN, ADMIN_PASSWORD = f"cn=admin,{SUFFIX}", "directory admin"
PEOPLE, GROUPS = f"ou=people,{SUFFIX}", f"ou=groups,{SUFFIX}"
SCHEMAS = ("core", "cosine", "nis", "inetorgperson")


def wait_listening(process, port: int, log: Path, name: str) -> None:
    """Until a daemon the suite started accepts connections on its loopback port (its log if it dies)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on port {port} within 20 s")


def entry(uid: str, password: str, name: str | None = None, mail: str | None = None) -> dict:
    """A person's attributes (inetOrgPerson and posixAccount), as slapadd's LDIF or an administrator's add."""
    name = name or uid.capitalize() + " Example"
    return {"objectClass": ["inetOrgPerson", "posixAccount"], "uid": uid, "cn": name, "sn": name.split()[-1],
            "displayName": name, "mail": mail or f"{uid}@example.test", "userPassword": password,
            "uidNumber": str(1000 + sum(map(ord, uid))), "gidNumber": "100", "homeDirectory": f"/home/{uid}"}


def person_ldif(uid: str, password: str, name: str, mail: str) -> str:
    lines = [f"dn: uid={uid},{PEOPLE}"]
    for attribute, values in entry(uid, password, name, mail).items():
        lines += [f"{attribute}: {value}" for value in (values if isinstance(values, list) else [values])]
    return "\n".join(lines) + "\n\n"


class Slapd:
    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.ca = TestCA(root / "tls", "lablease test directory CA")
        self.process: subprocess.Popen | None = None
        self.binary = shutil.which("slapd") or "/usr/sbin/slapd"

    def configure(self, ldif: str) -> None:
        cert, key = self.ca.issue("slapd", ["127.0.0.1", "localhost"])
        (self.root / "db").mkdir(parents=True)
        schemas = "".join(f"include /etc/ldap/schema/{name}.schema\n" for name in SCHEMAS)
        (self.root / "slapd.conf").write_text(
            f"{schemas}modulepath /usr/lib/ldap\nmoduleload back_mdb\npidfile {self.root}/slapd.pid\n"
            f"TLSCACertificateFile {self.ca.cert}\nTLSCertificateFile {cert}\nTLSCertificateKeyFile {key}\n"
            f"database mdb\nmaxsize 10485760\nsuffix \"{SUFFIX}\"\nrootdn \"{ADMIN_DN}\"\n"
            f"rootpw \"{ADMIN_PASSWORD}\"\ndirectory {self.root}/db\n"
            "access to attrs=userPassword by anonymous auth by self read by * none\n"
            "access to * by * read\n")
        base = (f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n"
                f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n\n"
                f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n\n")
        (self.root / "data.ldif").write_text(base + ldif)
        subprocess.run([shutil.which("slapadd") or "/usr/sbin/slapadd", "-f", str(self.root / "slapd.conf"),
                        "-l", str(self.root / "data.ldif")], check=True, capture_output=True)

    def start(self) -> None:
        log = open(self.root / "slapd.log", "ab")
        # -d 0: in the foreground (the fixture owns the process), logging nothing but startup errors
        self.process = subprocess.Popen([self.binary, "-d", "0", "-f", str(self.root / "slapd.conf"),
                                         "-h", f"ldap://127.0.0.1:{self.port}/"], stdout=log, stderr=log)
        log.close()
        wait_listening(self.process, self.port, self.root / "slapd.log", "slapd")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def admin(self):
        """The directory's administrator, to add and remove people and members as a site would."""
        ldap3 = load_ldap3()
        tls = ldap3.Tls(ca_certs_file=str(self.ca.cert))
        connection = ldap3.Connection(ldap3.Server(self.url, tls=tls), ADMIN_DN, ADMIN_PASSWORD)
        connection.open()
        connection.start_tls()
        assert connection.bind(), connection.result
        return connection

    def settings(self, **more) -> dict:
        """lablease's settings that point at this directory (anonymous searches, StartTLS under the test CA)."""
        return {"ldap_url": self.url, "ldap_ca_file": str(self.ca.cert), "ldap_user_base": PEOPLE,
                "ldap_group_base": GROUPS, "ldap_timeout": "3s", **more}


def start_slapd(tmp_path_factory, ldif: str):
    """A started slapd holding `ldif` (people and groups under PEOPLE and GROUPS); stop() it when done."""
    if not Path("/usr/sbin/slapd").exists() and shutil.which("slapd") is None:
        pytest.fail("slapd is missing: run scripts/ensure-directory.sh (make test does)")
    server = Slapd(tmp_path_factory.mktemp("slapd"))
    server.configure(ldif)
    server.start()
    return server
