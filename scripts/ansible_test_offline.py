"""Let `ansible-test --venv` bootstrap pip without its download host.

ansible-test creates each test venv without pip, then runs a `get-pip`
script that it downloads from ci-files.testing.ansible.com into
~/.ansible/test/cache/get_pip_<version>.py (ansible/ansible#77304). That host
is not reachable from every build machine, while PyPI is. This writes a
stand-in to that cache path: it installs the pinned pip (and whatever else
ansible-test asked for) from PyPI with the checkout's uv (.venv/bin/uv, given
as the first argument), which takes a fraction of a second from its cache;
where that uv is gone, it runs `python -m ensurepip` and then pip, honouring
pip.conf. A new machine's sanity runs make some forty such venvs (about ten
tests, four ansible-core branches). Run by `make sanity` / `make units`;
idempotent.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

STANDIN = '''"""Stand-in for get-pip.py written by lablease scripts/ansible_test_offline.py."""
import os
import subprocess
import sys

UV = %r
DROP = {"--no-setuptools", "--no-wheel"}


def main():
    args = [a for a in sys.argv[1:] if a not in DROP]
    if os.access(UV, os.X_OK):  # the packages asked for (pip==X, ...), without pip's own options
        packages = [a for a in args if not a.startswith("-")]
        # ansible-test runs this without SSL_CERT_FILE: the system's certificates, as pip's own would be
        subprocess.check_call([UV, "pip", "install", "-q", "--native-tls", "--python", sys.executable] + packages)
        return
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q"] + args)


if __name__ == "__main__":
    main()
'''


def main() -> int:
    from ansible_test._internal.python_requirements import get_venv_packages

    uv = sys.argv[1] if len(sys.argv) > 1 else ""
    standin = STANDIN % uv

    version = "%d.%d" % sys.version_info[:2]
    pip_version = get_venv_packages(SimpleNamespace(version=version))["pip"]
    target = Path.home() / ".ansible" / "test" / "cache" / ("get_pip_%s.py" % pip_version.replace(".", "_"))
    if target.exists() and "lablease" not in target.read_text(errors="replace"):
        return 0  # a real get-pip script is already cached: keep it
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text() != standin:
        target.write_text(standin)
        print("ansible-test: pip %s bootstrap stand-in written to %s" % (pip_version, target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
