"""Drives mrack's Beaker provider as tmt and mrack's own `mrack up` do, run by the mrack tool venv's Python
(.venv/tools/mrack, `make mrack`): `up NAME DISTRO PUBKEY FQDN` submits a host's job and waits until Beaker says Reserved, printing
the job id first and mrack's host data last (JSON lines); `destroy J:id` deletes the host (cancels the job).

mrack is used as a library: `mrack up` also loads its AWS, OpenStack and libvirt providers, whose
requirements (testcloud, libvirt-python) the tool venv leaves out. The configuration is bkr's own file
(BEAKER_CONF), as mrack reads it.
"""
import asyncio
import json
import sys

from mrack.providers.beaker import BeakerProvider


def requirement(name: str, distro: str, pubkey: str, fqdn: str) -> dict:
    """What mrack's Beaker transformer makes of a host in its metadata (transformers/beaker.py)."""
    return {"name": name, "distro": distro, "os": "mrackos-1", "group": "client", "meta_distro": False,
            "arch": "x86_64", "variant": "Server", "job_owner": None, "job_group": None,
            "ks_meta": "harness='restraint-rhts beakerlib-redhat'", "kernel_options": None,
            "kernel_options_post": None, "retention_tag": "audit", "product": "[internal]",
            "whiteboard": "This job has been created using mrack.", "priority": "Normal",
            "tasks": [{"name": "/distribution/dummy", "role": "STANDALONE",
                       "params": ["RSTRNT_DISABLED=10_avc_check"]}],
            "ks_append": ["%post\nmkdir -p /root/.ssh\ncat >>/root/.ssh/authorized_keys << \"__EOF__\"\n"
                          f"# keys added by mrack:\n{pubkey}\n# end section of keys added by mrack\n__EOF__\n"
                          "restorecon -R /root/.ssh\nchmod go-w /root /root/.ssh /root/.ssh/authorized_keys\n%end"],
            "hostRequires": {"_force": fqdn},  # mrack's way to ask for one system: <hostRequires force=>
            "distro_tags": [], "watchdog": None}


async def up(name: str, distro: str, pubkey: str, fqdn: str) -> None:
    provider = BeakerProvider()
    await provider.init(distros=[distro], timeout=5, reserve_duration=3600)
    provider.poll_sleep = 0.2  # mrack polls every 45 s; the test has no such time
    req = requirement(name, distro, pubkey, fqdn)
    await provider.validate_hosts([req])
    job_id, req = await provider.create_server(req)
    print(json.dumps({"job": job_id}), flush=True)
    result, req = await provider.wait_till_provisioned((job_id, req))
    print(json.dumps(provider.prov_result_to_host_data(result, req)), flush=True)


async def destroy(job_id: str, name: str) -> None:
    provider = BeakerProvider()
    await provider.init(distros=[], timeout=5, reserve_duration=3600)
    print(json.dumps({"deleted": await provider.delete_host(job_id, name)}), flush=True)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    asyncio.run(up(*args) if command == "up" else destroy(*args))
