"""Redfish BMCs over HTTPS: find the ComputerSystem, then POST its Reset action."""
from __future__ import annotations

import requests

from . import PowerDriver, PowerError

RESET = {"on": "On", "off": "ForceOff", "reboot": "ForceRestart", "interrupt": "Nmi"}
STATES = {"on": "on", "off": "off"}  # PoweringOn/PoweringOff are in between: unknown
FALSE = {"false", "no", "0", "off"}


class RedfishDriver(PowerDriver):
    name = "redfish"
    interrupts = True
    required = ("user", "password")

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        if not (settings.get("address") or settings.get("url")):
            raise ValueError("power driver redfish needs the setting address (or a full url)")

    def _base(self) -> str:
        return self.setting("url", f"https://{self.setting('address')}").rstrip("/")

    def _verify(self):
        """True, False, or a CA bundle path: the `verify` setting as requests understands it."""
        value = self.settings.get("verify", True)
        if isinstance(value, str):
            return False if value.strip().lower() in FALSE else (True if value.lower() == "true" else value)
        return bool(value)

    def _call(self, session: requests.Session, method: str, path: str, body: dict | None = None) -> dict:
        url = path if path.startswith("http") else self._base() + path
        try:
            # verify per request: requests lets REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE override a session's verify,
            # which would drop the BMC's own CA file on a server whose environment names the system bundle.
            response = session.request(method, url, json=body, timeout=self.target.timeout, verify=self._verify())
        except requests.RequestException as error:
            # The exception's text can repeat the URL and headers; its class name says enough.
            raise PowerError(f"redfish {method} {path} on {self.target.fqdn}: {type(error).__name__}") from None
        if not response.ok:
            raise PowerError(f"redfish {method} {path} on {self.target.fqdn} answered "
                             f"{response.status_code} {response.reason}{_message(response)}")
        if method != "GET":
            return {}  # a Reset may answer 204, a task, or text: its status already said it worked
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise PowerError(f"redfish {method} {path} on {self.target.fqdn}: the answer is not a JSON object")
        return body

    def _session(self) -> requests.Session:
        session = requests.Session()
        session.auth = (self.setting("user"), self.setting("password"))
        session.headers["Accept"] = "application/json"
        return session

    def _system(self, session: requests.Session) -> tuple[str, dict]:
        if self.setting("id"):
            path = f"/redfish/v1/Systems/{self.setting('id')}"
        else:
            members = self._call(session, "GET", "/redfish/v1/Systems").get("Members") or [{}]
            path = members[0].get("@odata.id") if isinstance(members[0], dict) else None
            if not path:
                raise PowerError(f"redfish on {self.target.fqdn}: the BMC lists no systems")
        return path, self._call(session, "GET", path)

    def _reset(self, action: str) -> None:
        with self._session() as session:
            path, system = self._system(session)
            reset_type = RESET[action]
            if action == "reboot" and _state(system) == "off":
                reset_type = "On"  # a restart of a machine that is off is refused by many BMCs
            target = system.get("Actions", {}).get("#ComputerSystem.Reset", {}).get("target") \
                or f"{path}/Actions/ComputerSystem.Reset"
            self._call(session, "POST", target, {"ResetType": reset_type})

    def on(self) -> None:
        self._reset("on")

    def off(self) -> None:
        self._reset("off")

    def reboot(self) -> None:
        self._reset("reboot")

    def interrupt(self) -> None:
        self._reset("interrupt")

    def status(self) -> str:
        with self._session() as session:
            return _state(self._system(session)[1])


def _state(system: dict) -> str:
    return STATES.get(str(system.get("PowerState", "")).lower(), "unknown")


def _message(response: requests.Response) -> str:
    """The BMC's own explanation, when it gave one in the standard Redfish error shape."""
    try:
        body = response.json()
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return ""
    info = error.get("@Message.ExtendedInfo") or [{}]
    text = (info[0].get("Message") if isinstance(info[0], dict) else "") or error.get("message") or ""
    return f": {text[:200]}" if text else ""
