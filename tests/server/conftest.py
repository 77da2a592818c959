from tests.support.fixtures import *  # noqa: F401,F403

# The files that take longest run first. pytest-xdist (--dist loadfile) hands out whole files in the order
# they were collected: a long file handed out last keeps one process busy while the others have nothing
# left, and `make test-server` ended with minutes of half-idle cores. Rough order of their time on 2 cores
# (each run's slowest tests are printed at its end); every other file keeps its place after these.
LONGEST_FIRST = (
    "tests/e2e/test_storm.py",
    "tests/e2e/test_worker_isolation_e2e.py",
    "tests/e2e/test_qemu_e2e.py",
    "tests/e2e/test_soak.py",
    "tests/e2e/test_provisioning_e2e.py",
    "tests/server/beaker/test_bkr_jobs.py",
    "tests/e2e/test_webhook_delivery_e2e.py",
    "tests/e2e/test_backup_e2e.py",
    "tests/server/integration/test_upgrades.py",
    "tests/e2e/test_loans_e2e.py",
    "tests/e2e/test_jobs_e2e.py",
    "tests/server/integration/test_lab_agents.py",
    "tests/server/cli/test_cli_pipeline.py",
    "tests/e2e/test_serving_e2e.py",
    "tests/e2e/test_advance_e2e.py",
    "tests/e2e/test_restarts_e2e.py",
    "tests/e2e/test_libvirt_e2e.py",
    "tests/e2e/test_chaos.py",
    "tests/server/unit/test_layering.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: files stay whole
