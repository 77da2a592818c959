"""`lablease-server` as an administrator types it: a bad option is a usage error (status 2), like argparse's own."""
import subprocess

import pytest

from tests.support.live import BIN, run_cli

USAGE = 2


def run(server, *args: str) -> subprocess.CompletedProcess:
    """`lablease-server ARGS` against the server's database, through the command line's main() in this process
    (tests/support/live.py run_cli): its exit status, standard output and error."""
    code, out, err = run_cli(args, server.env)
    return subprocess.CompletedProcess(["lablease-server", *args], code, out, err)


def run_installed(server, *args: str) -> subprocess.CompletedProcess:
    """The installed `lablease-server` script, in a process of its own: the status the shell sees."""
    return subprocess.run([str(BIN / "lablease-server"), *args], env=server.env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("args, message", [
    (("token", "create", "bob", "--expires", "soon"),
     "argument --expires: 'soon' is not a duration (try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"),
    (("token", "create", "bob", "--expires", "1y"),
     "argument --expires: years and months have no fixed length; use weeks or days"),
    (("token", "create", "bob", "--expires", "P1M"),
     "argument --expires: years and months have no fixed length; use weeks or days"),
    (("token", "create", "bob", "--expires=-4h"),
         "argument --expires: '-4h' is not a duration (try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"),
        (("token", "create", "bob", "--expires=0s"), "argument --expires: must be positive"),
    (("system", "add", "x.lab.test", "--arch", "x86_64", "--attr", "gpu"),
     "argument --attr: 'gpu' is not KEY=VALUE"),
])
def test_bad_options_are_usage_errors(server, args, message):
    result = run_installed(server, *args)
    assert result.returncode == USAGE, result
    assert result.stderr.splitlines()[-1].endswith(message)
    assert "Traceback" not in result.stderr


def test_a_token_with_a_lifetime_works_until_it_ends(server, cli):
    result = run(server, "token", "create", "bob", "--name", "short", "--expires", "2h")
    assert result.returncode == 0, result
    assert "token 'short' for bob created until " in result.stderr
    who = cli("whoami", "--json", env={"LABLEASE_URL": server.url, "LABLEASE_TOKEN": result.stdout.strip()})
    assert who.code == 0 and '"bob"' in who.out


def test_the_clients_own_durations_follow_the_same_rule(cli):
    result = cli("job", "submit", "job.xml", "--wait", "--timeout", "1y")
    assert result.code == USAGE
    assert result.err.splitlines()[-1].endswith("argument --timeout: years and months have no fixed length; "
                                                "use weeks or days")
