"""The multiprocess directory: what `serve` removes when it starts."""
import os
import subprocess
import sys

from lablease.observe.metrics import clean


def test_files_of_processes_that_no_longer_run_are_removed_and_the_others_kept(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    for name in (f"counter_{dead}.db", f"histogram_{dead}.db", f"counter_{os.getpid()}.db",
                 f"gauge_livesum_{os.getpid()}.db", "stray.db"):
        (tmp_path / name).write_bytes(b"")
    clean(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"counter_{os.getpid()}.db",
                                                           f"gauge_livesum_{os.getpid()}.db"]
