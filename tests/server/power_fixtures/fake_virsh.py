"""A stand-in for virsh: records its argv, keeps the domain state in a file, answers like virsh.

Environment: FAKE_POWER_LOG (JSON lines appended), FAKE_POWER_STATE (running/shut off).
"""
import json
import os
import sys
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_POWER_LOG"], "a") as log:
    log.write(json.dumps({"argv": args}) + "\n")

if len(args) != 4 or args[0] != "-c":
    sys.exit(f"fake virsh: unexpected command {args}")
_, uri, command, domain = args
state = Path(os.environ["FAKE_POWER_STATE"])
current = state.read_text().strip() if state.exists() else "shut off"
if command == "domstate":
    print(current + "\n")
elif command == "start":
    if current == "running":
        sys.exit("error: Failed to start domain '%s'\nerror: Requested operation is not valid: domain is already running" % domain)
    state.write_text("running")
    print(f"Domain '{domain}' started\n")
elif command == "destroy":
    if current != "running":
        sys.exit("error: Failed to destroy domain '%s'\nerror: Requested operation is not valid: domain is not running" % domain)
    state.write_text("shut off")
    print(f"Domain '{domain}' destroyed\n")
elif command == "reset":
    print(f"Domain '{domain}' was reset\n")
elif command == "inject-nmi":
    if current != "running":
        sys.exit("error: Requested operation is not valid: domain is not running")
else:
    sys.exit(f"error: unknown command: '{command}'")
