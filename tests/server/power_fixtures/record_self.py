"""Records its own command line and environment (as /proc shows them) into the file named by argv[1]."""
import json
import sys
from pathlib import Path

cmdline = Path("/proc/self/cmdline").read_bytes().decode()
environ = Path("/proc/self/environ").read_bytes().decode()
Path(sys.argv[1]).write_text(json.dumps({"cmdline": cmdline, "environ": environ}))
