"""Job XML -> the job's JSON form: Beaker-style jobs, every mapping, round trips."""
import pytest

from lablease.jobxml import normalise_job, parse_job_xml, referenced_names, render_job_xml

from .jobs import MINIMAL, MULTIHOST, MULTIHOST_JSON, host, job_with


def recipe_of(job: dict, set_index: int = 0, index: int = 0) -> dict:
    return job["recipe_sets"][set_index]["recipes"][index]


def test_a_multihost_beaker_job_reads_in_full():
    job = parse_job_xml(MULTIHOST)
    assert job["whiteboard"] == "NFS server and client, RHEL-like, 10G network"
    assert job["group"] == "storage-qa"
    first, second = job["recipe_sets"]
    assert (first["priority"], first["ar"], second["priority"], second["ar"]) == ("High", None, "Normal", 42)
    server, client = first["recipes"]
    assert server["whiteboard"] == "nfs server"
    assert server["runtime_limit"] == 4 * 3600
    assert server["autopick"] == {"random": False, "pools": ["storage-lab", "shared"]}
    assert server["reservesys"] == {"onabort": True, "onfail": True, "onwarn": False, "onpass": False, "duration": 3600}
    assert server["host_requires"]["and"][0] == {"and": [
        {"field": "arch", "op": "=", "value": "x86_64"},
        {"field": "memory", "op": ">=", "value": 8192},
    ]}
    assert server["host_requires"]["and"][2] == {"field": "key_value", "key": "NETWORK", "op": "=", "value": "10G"}
    assert server["tasks"][1] == {"name": "/kernel/filesystems/nfs/connectathon", "role": "SERVERS",
                                  "params": {"NFS_VERSION": "4.2", "EXPORT": "/srv/nfs"}}
    assert server["tasks"][0]["role"] == "STANDALONE"
    assert client["force"] == "client-07.lab.example.com" and client["host_requires"] is None
    assert client["reservesys"]["duration"] == 7200
    assert recipe_of(job, 1)["autopick"] == {"random": True, "pools": []}


def test_xml_and_json_of_the_same_job_normalise_identically():
    assert parse_job_xml(MULTIHOST) == normalise_job(MULTIHOST_JSON)


@pytest.mark.parametrize("document", [MULTIHOST, MINIMAL, host(b"<and/>"), job_with(b"<distroRequires/>")])
def test_render_then_parse_gives_the_same_job(document):
    job = parse_job_xml(document)
    assert parse_job_xml(render_job_xml(job)) == job
    assert normalise_job(job) == job  # the normal form is a fixed point


def test_defaults_of_a_minimal_job():
    assert parse_job_xml(MINIMAL) == {
        "whiteboard": "",
        "group": None, "retention_tag": None, "product": None, "notify": {"cc": []},
        "recipe_sets": [{"priority": "Normal", "ar": None, "recipes": [{
            "whiteboard": "", "host_requires": None, "force": None, "distro_requires": None,
            "autopick": {"random": False, "pools": []}, "reservesys": None, "runtime_limit": None,
            "ks_meta": "", "kernel_options": "", "kernel_options_post": "", "role": None, "watchdog": None,
            "distro": None, "kickstart": None, "packages": [], "ks_appends": [], "repos": [], "partitions": [],
            "tasks": [],
        }]}],
    }


@pytest.mark.parametrize("xml, field", [
    (b'<hostname value="a.example.com"/>', "hostname"),
    (b'<system><name value="a.example.com"/></system>', "hostname"),
    (b'<arch value="s390x"/>', "arch"),
    (b'<system><arch value="s390x"/></system>', "arch"),
    (b'<lab value="brno"/>', "lab"),
    (b'<labcontroller value="brno"/>', "lab"),
    (b'<system><lab_controller value="brno"/></system>', "lab"),
])
def test_text_leaves_and_their_beaker_spellings(xml, field):
    value = "a.example.com" if field == "hostname" else ("s390x" if field == "arch" else "brno")
    assert recipe_of(parse_job_xml(host(xml)))["host_requires"] == {"field": field, "op": "=", "value": value}


@pytest.mark.parametrize("xml, field", [
    (b'<memory op="&gt;" value="2048"/>', "memory"),
    (b'<system><memory op="&gt;" value="2048"/></system>', "memory"),
    (b'<cpu_count op="&gt;" value="2048"/>', "cpu_count"),
    (b'<cpu><processors op="&gt;" value="2048"/></cpu>', "cpu_count"),
    (b'<cpu><cores op="&gt;" value="2048"/></cpu>', "cpu_cores"),
    (b'<numa_node_count op="&gt;" value="2048"/>', "numa_nodes"),
    (b'<system><numanodes op="&gt;" value="2048"/></system>', "numa_nodes"),
])
def test_numeric_leaves_get_int_values(xml, field):
    assert recipe_of(parse_job_xml(host(xml)))["host_requires"] == {"field": field, "op": ">", "value": 2048}


@pytest.mark.parametrize("xml, field", [
    (b'<distro_name value="F-40"/>', "distro_name"), (b'<name value="F-40"/>', "distro_name"),
    (b'<distro_family value="F-40"/>', "distro_family"), (b'<family value="F-40"/>', "distro_family"),
    (b'<distro_arch value="F-40"/>', "distro_arch"), (b'<arch value="F-40"/>', "distro_arch"),
    (b'<distro_variant value="F-40"/>', "distro_variant"), (b'<variant value="F-40"/>', "distro_variant"),
    (b'<distro_tag value="F-40"/>', "distro_tag"), (b'<tag value="F-40"/>', "distro_tag"),
])
def test_distro_leaves(xml, field):
    job = parse_job_xml(job_with(b"<distroRequires>" + xml + b"</distroRequires>"))
    assert recipe_of(job)["distro_requires"] == {"field": field, "op": "=", "value": "F-40"}


@pytest.mark.parametrize("op, expected", [
    (b"=", "="), (b"==", "="), (b"!=", "!="), (b"&lt;", "<"), (b"&lt;=", "<="), (b"&gt;", ">"),
    (b"&gt;=", ">="), (b"like", "like"),
])
def test_key_value_takes_every_op(op, expected):
    leaf = recipe_of(parse_job_xml(host(b'<key_value key="DISKS" op="' + op + b'" value="2"/>')))["host_requires"]
    assert leaf == {"field": "key_value", "key": "DISKS", "op": expected, "value": "2"}


def test_containers_with_several_filters_mean_and_and_empty_ones_mean_anything():
    two = recipe_of(parse_job_xml(host(b'<arch value="x"/><pool value="p"/>')))["host_requires"]
    assert two == {"and": [{"field": "arch", "op": "=", "value": "x"}, {"field": "pool", "op": "=", "value": "p"}]}
    assert recipe_of(parse_job_xml(host(b"")))["host_requires"] is None
    assert recipe_of(parse_job_xml(host(b"<and/>")))["host_requires"] == {"and": []}
    assert recipe_of(parse_job_xml(host(b"<system/>")))["host_requires"] == {"and": []}
    # distroRequires present but empty: install, any distro tree (as Beaker); absent: no install
    assert recipe_of(parse_job_xml(job_with(b"<distroRequires/>")))["distro_requires"] == {"and": []}
    assert recipe_of(parse_job_xml(MINIMAL))["distro_requires"] is None


def test_not_around_several_filters_negates_their_and():
    tree = recipe_of(parse_job_xml(host(b'<not><arch value="x"/><memory value="1"/></not>')))["host_requires"]
    assert tree == {"not": {"and": [{"field": "arch", "op": "=", "value": "x"},
                                    {"field": "memory", "op": "=", "value": 1}]}}


@pytest.mark.parametrize("when, flags", [
    ("always", (True, True, True, True)),
    ("onwarn", (True, True, True, False)),
    ("onfail", (True, True, False, False)),
    ("onabort", (True, False, False, False)),
])
def test_reservesys_when(when, flags):
    reservesys = recipe_of(parse_job_xml(job_with(f'<reservesys when="{when}"/>'.encode())))["reservesys"]
    assert reservesys == {**dict(zip(("onabort", "onfail", "onwarn", "onpass"), flags)), "duration": 86400}


def test_reservesys_flags_default_to_true():
    reservesys = recipe_of(parse_job_xml(job_with(b'<reservesys onpass="FALSE" onwarn="0"/>')))["reservesys"]
    assert reservesys == {"onabort": True, "onfail": True, "onwarn": False, "onpass": False, "duration": 86400}


@pytest.mark.parametrize("text, seconds", [
    ("3600", 3600), ("4h", 14400), ("PT4H", 14400), ("1:30:00", 5400), ("2d", 172800), ("30m", 1800),
])
def test_durations_in_every_form(text, seconds):
    job = parse_job_xml(job_with(f'<reservesys duration="{text}"/>'.encode(), f' runtime_limit="{text}"'.encode()))
    assert recipe_of(job)["runtime_limit"] == seconds
    assert recipe_of(job)["reservesys"]["duration"] == seconds


def test_declared_encoding_is_ignored_the_body_is_utf8():
    document = '<?xml version="1.0" encoding="ISO-8859-1"?><job><whiteboard>Zkouška</whiteboard>' \
               '<recipeSet><recipe/></recipeSet></job>'
    assert parse_job_xml(document.encode("utf-8"))["whiteboard"] == "Zkouška"


def test_comments_cdata_and_a_bom_are_fine():
    document = b"\xef\xbb\xbf<?xml version='1.0'?><!-- made by hand -->" \
               b"<job><whiteboard><![CDATA[a <b> c]]></whiteboard><recipeSet><recipe/></recipeSet></job>"
    assert parse_job_xml(document)["whiteboard"] == "a <b> c"


def test_referenced_names_lists_what_the_service_must_look_up():
    names = referenced_names(parse_job_xml(MULTIHOST))
    assert names["pools"] == {"storage-lab", "shared"}  # "" (in no pool) is not a name
    assert names["attribute_keys"] == {"NETWORK"}
    assert names["systems"] == {"client-07.lab.example.com"}
    assert len(names["distros"]) == 2
    assert names["distros"][0]["and"][0] == {"field": "distro_family", "op": "=", "value": "Fedora40"}


def test_referenced_names_of_a_job_without_any():
    assert referenced_names(parse_job_xml(MINIMAL)) == {
        "pools": set(), "attribute_keys": set(), "distros": [], "systems": set(), "arches": set()}
