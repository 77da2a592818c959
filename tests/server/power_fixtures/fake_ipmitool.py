"""A stand-in for ipmitool: records its argv and IPMI_PASSWORD, keeps the chassis state in a file.

Environment: FAKE_POWER_LOG (JSON lines appended), FAKE_POWER_STATE (on/off),
FAKE_BMC_PASSWORD (what the "BMC" accepts).
"""
import json
import os
import sys
from pathlib import Path

args = sys.argv[1:]
password = os.environ.get("IPMI_PASSWORD")
cmdline = Path("/proc/self/cmdline").read_bytes().decode().split("\0")
with open(os.environ["FAKE_POWER_LOG"], "a") as log:
    log.write(json.dumps({"argv": args, "IPMI_PASSWORD": password, "cmdline": cmdline}) + "\n")

if "-E" in args and password is None:
    sys.exit("Unable to read password from environment")
if password != os.environ.get("FAKE_BMC_PASSWORD"):
    print("Error: Unable to establish IPMI v2 / RMCP+ session", file=sys.stderr)
    sys.exit(1)

state = Path(os.environ["FAKE_POWER_STATE"])
current = state.read_text().strip() if state.exists() else "off"
action = args[-1]
if args[-3:-1] != ["chassis", "power"]:
    sys.exit(f"fake ipmitool: unexpected command {args}")
if action == "status":
    print(f"Chassis Power is {current}")
elif action in ("on", "off"):
    state.write_text(action)
    print(f"Chassis Power Control: {'Up/On' if action == 'on' else 'Down/Off'}")
elif action == "cycle":
    print("Chassis Power Control: Cycle")
else:
    sys.exit(f"fake ipmitool: unknown action {action}")
