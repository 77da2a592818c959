"""Realistic job documents shared by the jobxml tests."""

MULTIHOST = b"""<?xml version="1.0" encoding="UTF-8"?>
<job group="storage-qa" retention_tag="scratch" product="lablease">
  <whiteboard>
    NFS server and client, RHEL-like, 10G network
  </whiteboard>
  <recipeSet priority="High">
    <recipe whiteboard="nfs server" role="SERVERS" ks_meta="method=nfs harness=restraint"
            kernel_options="console=ttyS0,115200" runtime_limit="4h">
      <autopick random="false"><pool>storage-lab</pool><pool>shared</pool></autopick>
      <distroRequires>
        <and>
          <distro_family op="=" value="Fedora40"/>
          <distro_variant op="=" value="Server"/>
          <distro_arch op="=" value="x86_64"/>
          <not><distro_tag op="=" value="BROKEN"/></not>
        </and>
      </distroRequires>
      <hostRequires>
        <and>
          <system>
            <arch op="=" value="x86_64"/>
            <memory op="&gt;=" value="8192"/>
          </system>
          <cpu><processors op="&gt;=" value="4"/></cpu>
          <key_value key="NETWORK" op="==" value="10G"/>
          <or>
            <pool op="=" value="storage-lab"/>
            <pool op="=" value=""/>
          </or>
          <not>
            <hostname op="like" value="%.broken.example.com"/>
          </not>
        </and>
      </hostRequires>
      <reservesys when="onfail" duration="3600"/>
      <watchdog panic="ignore"/>
      <task name="/distribution/check-install" role="STANDALONE"/>
      <task name="/kernel/filesystems/nfs/connectathon" role="SERVERS">
        <params>
          <param name="NFS_VERSION" value="4.2"/>
          <param name="EXPORT" value="/srv/nfs"/>
        </params>
      </task>
    </recipe>
    <recipe whiteboard="nfs client">
      <distroRequires>
        <distro_family op="=" value="Fedora40"/>
        <distro_arch value="x86_64"/>
      </distroRequires>
      <hostRequires force="client-07.lab.example.com"/>
      <reservesys onabort="true" onfail="true" onwarn="false" onpass="false" duration="PT2H"/>
      <task name="/kernel/filesystems/nfs/connectathon" role="CLIENTS"/>
    </recipe>
  </recipeSet>
  <recipeSet ar="42">
    <recipe>
      <autopick random="true"/>
      <hostRequires>
        <labcontroller value="lab-a"/>
        <cpu_count op="&gt;" value="2"/>
      </hostRequires>
    </recipe>
  </recipeSet>
</job>
"""

MULTIHOST_JSON = {
    "whiteboard": "NFS server and client, RHEL-like, 10G network",
    "group": "storage-qa",
    "retention_tag": "scratch",
    "product": "lablease",
    "recipe_sets": [
        {
            "priority": "High",
            "recipes": [
                {
                    "whiteboard": "nfs server",
                    "role": "SERVERS",
                    "watchdog": {"panic": "ignore"},
                    "ks_meta": "method=nfs harness=restraint",
                    "kernel_options": "console=ttyS0,115200",
                    "runtime_limit": "PT4H",
                    "autopick": {"pools": ["storage-lab", "shared"]},
                    "distro_requires": {"and": [
                        {"field": "distro_family", "value": "Fedora40"},
                        {"field": "distro_variant", "op": "=", "value": "Server"},
                        {"field": "distro_arch", "op": "==", "value": "x86_64"},
                        {"not": {"field": "distro_tag", "value": "BROKEN"}},
                    ]},
                    "host_requires": {"and": [
                        {"and": [
                            {"field": "arch", "value": "x86_64"},
                            {"field": "memory", "op": ">=", "value": 8192},
                        ]},
                        {"field": "cpu_count", "op": ">=", "value": 4},
                        {"field": "key_value", "key": "NETWORK", "value": "10G"},
                        {"or": [
                            {"field": "pool", "value": "storage-lab"},
                            {"field": "pool", "value": ""},
                        ]},
                        {"not": {"field": "hostname", "op": "like", "value": "%.broken.example.com"}},
                    ]},
                    "reservesys": {"when": "onfail", "duration": 3600},
                    "tasks": [
                        {"name": "/distribution/check-install"},
                        {"name": "/kernel/filesystems/nfs/connectathon", "role": "SERVERS",
                         "params": {"NFS_VERSION": "4.2", "EXPORT": "/srv/nfs"}},
                    ],
                },
                {
                    "whiteboard": "nfs client",
                    "distro_requires": {"and": [
                        {"field": "distro_family", "value": "Fedora40"},
                        {"field": "distro_arch", "value": "x86_64"},
                    ]},
                    "force": "client-07.lab.example.com",
                    "reservesys": {"onwarn": False, "onpass": False, "duration": "2h"},
                    "tasks": [{"name": "/kernel/filesystems/nfs/connectathon", "role": "CLIENTS"}],
                },
            ],
        },
        {
            "ar": 42,
            "recipes": [{
                "autopick": {"random": True},
                "host_requires": {"and": [
                    {"field": "lab", "value": "lab-a"},
                    {"field": "cpu_count", "op": ">", "value": 2},
                ]},
            }],
        },
    ],
}

MINIMAL = b"<job><recipeSet><recipe/></recipeSet></job>"


def job_with(recipe_content: bytes = b"", recipe_attributes: bytes = b"", recipe_set_attributes: bytes = b"") -> bytes:
    """A one-recipe job around the given recipe content."""
    return (b"<job>\n<recipeSet" + recipe_set_attributes + b">\n<recipe" + recipe_attributes + b">\n"
            + recipe_content + b"\n</recipe>\n</recipeSet>\n</job>\n")


def host(filters: bytes) -> bytes:
    return job_with(b"<hostRequires>" + filters + b"</hostRequires>")
