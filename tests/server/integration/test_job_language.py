"""Beaker's job language over the API: the corpus scheduled, warnings kept, kickstart customisation,
<notify><cc> mail, and the export that resubmits to an identical job."""
from pathlib import Path

import pytest

from lablease.config import Settings
from lablease.domain.paging import MAX_LIMIT, PageRequest
from lablease.services.records import activity
from lablease.store.tables import Job
from lablease.store.uow import UnitOfWork
from lablease.worker.delivery import senders
from lablease.worker.loop import deliver_due

from .conftest import START, Lab
from .test_notices import smtp  # noqa: F401 (the loopback SMTP server fixture)

CORPUS = Path(__file__).resolve().parents[1] / "jobxml" / "corpus"
SCHEDULED = ("scheduled", "waiting", "installing", "running")
TREE = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "variant": "Server", "tags": ["RELEASED"],
        "labs": ["lab-a"], "url": "http://mirror.lab.test/f40/os/", "kernel": "images/pxeboot/vmlinuz",
        "initrd": "images/pxeboot/initrd.img"}


def site(lab: Lab) -> Lab:
    """Two installable systems in lab-a on a 10G network, able to run guests (HVM), and a released Fedora 40 tree there."""
    for n in (1, 2):
        lab.system(f"n{n}.lab.test", condition="automated", lab="lab-a", memory_mb=4096,
                   attributes={"NETWORK": "10G", "HVM": "1"}, power={"driver": "virtual"},
                   netboot={"mac": f"52:54:00:00:01:0{n}"})
    status, tree = lab.admin.post("/distro-trees", TREE)
    assert status == 201, tree
    return lab


@pytest.fixture
def lab(db, tmp_path):
    return site(Lab(db, Settings(data_dir=str(tmp_path / "data"))))


def post_xml(lab, user, body: bytes):
    response = lab.client.post("/api/v1/jobs", data=body, content_type="application/xml",
                               headers={"Authorization": f"Bearer {lab.tokens[user]}"})
    return response.status_code, response.get_json()


def recipes(job):
    return [r for rs in job["recipe_sets"] for r in rs["recipes"]]


def kickstart_of(lab, fqdn="n1.lab.test") -> str:
    newest = lab.admin.get(f"/systems/{fqdn}/installations")[1][0]
    return lab.admin.get(f"/installations/{newest['id']}")[1]["kickstart"]


def test_every_document_of_the_corpus_is_accepted_and_scheduled(lab):
    # inventory-*.xml ask for hardware these two systems lack: test_inventory.py schedules them on systems
    # with the inventory each recipe names
    for path in sorted(p for p in CORPUS.glob("*.xml") if not p.name.startswith("inventory-")):
        status, job = post_xml(lab, "admin", path.read_bytes())
        assert status == 201, (path.name, job)
        assert all(r["status"] in SCHEDULED for r in recipes(job)), (path.name, recipes(job))
        assert lab.admin.post(f"/jobs/{job['id']}/cancel")[0] == 200  # the systems for the next one


def test_the_parts_not_acted_on_are_warnings_kept_with_the_job(lab):
    status, job = post_xml(lab, "alice", (CORPUS / "exported_job.xml").read_bytes())
    assert status == 201, job
    paths = [w["path"] for w in job["warnings"]]
    assert paths[:4] == ["/job/@id", "/job/@owner", "/job/@result", "/job/@status"]
    assert "/job/recipeSet[1]/recipe[1]/task[1]/results[1]" in paths and "/job/@retention_tag" in paths
    assert lab.alice.get(f"/jobs/{job['id']}")[1]["warnings"] == job["warnings"]  # stored with it
    status, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{"watchdog": {"panic": "ignore"}}]}]})
    assert status == 201 and job["warnings"] == [{
        "path": "/job/recipeSet[1]/recipe[1]/watchdog/@panic",
        "message": "kept; lablease does not watch consoles for panics (its watchdog is the recipe's runtime limit)"}]
    status, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    assert status == 201 and job["warnings"] == []


def test_grammar_errors_stay_422_with_the_line(lab):
    status, problem = post_xml(lab, "alice", b"<job>\n<recipeSet>\n<recipe>\n<partitions>\n"
                                             b"<partition name='mnt/x' size='big'/>\n</partitions>\n"
                                             b"</recipe>\n</recipeSet>\n</job>")
    assert status == 422 and problem["detail"] == "job: line 5: <partition> size: 'big' is not a whole number"
    status, problem = post_xml(lab, "alice", b"<job><recipeSet><recipe><repos><repo name='a b' url='http://x/'/>"
                                             b"</repos></recipe></recipeSet></job>")
    assert status == 422 and "'a b' is not a repository name" in problem["detail"]
    assert lab.admin.get("/jobs", mine="false")[1] == []


def test_kickstart_customisation_is_written_into_the_kickstart(lab):
    status, job = post_xml(lab, "alice", b"""<job><recipeSet>
      <recipe ks_meta="skipx autopart_type=plain selinux=--permissive packages=vim:git"
              kernel_options_post="console=ttyS0,115200 quiet">
        <distroRequires><name value="Fedora-40"/></distroRequires>
        <hostRequires><hostname value="n1.lab.test"/></hostRequires>
        <packages><package name="gcc"/></packages><installPackage>tmux</installPackage>
        <repos><repo name="tools" url="http://repo.lab.test/tools/"/></repos>
        <ks_appends><ks_append>%post --log=/root/appended.log
echo appended
%end</ks_append></ks_appends>
        <task name="/distribution/check-install"/>
      </recipe></recipeSet></job>""")
    assert status == 201, job
    text = kickstart_of(lab)
    lines = text.splitlines()
    for line in ("repo --name=tools --baseurl=http://repo.lab.test/tools/", "skipx", "autopart --type=plain",
                 'bootloader --location=mbr --append="console=ttyS0,115200 quiet"', "selinux --permissive",
                 "vim", "git", "gcc", "tmux", "[tools]", "baseurl=http://repo.lab.test/tools/"):
        assert line in lines, line
    packages = text[text.index("%packages\n"):text.index("%end", text.index("%packages\n"))]
    assert packages.split() == ["%packages", "@core", "vim", "git", "gcc", "tmux", "#", "no", "snippet", "packages"]
    # the appended section comes before lablease's own, whose install_done is the last %post
    assert text.index("echo appended") < text.index("lablease_callback install_start")
    assert text.rindex("%post") == text.index("%post --nochroot --erroronfail --log=/tmp/lablease-done.log")


def test_partitions_replace_autopart(lab):
    lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{
        "distro_requires": {"field": "distro_name", "value": "Fedora-40"},
        "host_requires": {"field": "hostname", "value": "n1.lab.test"},
        "partitions": [{"name": "mnt/scratch", "size": 20, "fs": "xfs"}, {"name": "var/data", "size": 5, "type": "lvm"},
                       {"name": "swap", "size": 2}]}]}]})
    lines = kickstart_of(lab).splitlines()
    assert "autopart" not in lines
    for line in ("reqpart --add-boot", "part pv.01 --size=1 --grow", "volgroup lablease pv.01",
                 "logvol / --vgname=lablease --name=root --fstype=xfs --size=4096 --grow",
                 "part /mnt/scratch --fstype=xfs --size=20480",
                 "logvol /var/data --vgname=lablease --name=var_data --fstype=ext3 --size=5120",
                 "part swap --fstype=swap --size=2048"):
        assert line in lines, line


def own_kickstart(fqdn: str) -> dict:
    return {"recipe_sets": [{"recipes": [{
        "distro_requires": {"field": "distro_name", "value": "Fedora-40"},
        "host_requires": {"field": "hostname", "value": fqdn},
        "kickstart": "# mine for {{ system.fqdn }}\nurl --url={{ distro.url }}\nautopart --type=btrfs\n",
        "ks_appends": ["%post\necho after\n%end"]}]}]}


def test_a_jobs_own_kickstart_is_rendered_for_admins_and_owners_only(lab):
    status, job = lab.admin.post("/jobs", own_kickstart("n1.lab.test"))
    assert status == 201 and recipes(job)[0]["status"] == "waiting", job
    text = kickstart_of(lab, "n1.lab.test")
    assert text.startswith("# mine for n1.lab.test\nurl --url=http://mirror.lab.test/f40/os/\nautopart --type=btrfs\n")
    assert "clearpart" not in text  # nothing of the built-in template, but the appends and lablease's sections
    assert text.index("echo after") < text.index("lablease_callback install_start") < text.index("install_done")

    lab.admin.patch("/systems/n2.lab.test", {"owner": "alice"})
    status, first = lab.alice.post("/jobs", own_kickstart("n2.lab.test"))  # alice owns n2
    assert recipes(first)[0]["status"] == "waiting", first
    lab.admin.post(f"/jobs/{first['id']}/cancel")
    status, job = lab.bob.post("/jobs", own_kickstart("n2.lab.test"))  # bob does not
    [recipe] = recipes(job)
    assert recipe["status"] == "aborted"
    with UnitOfWork(lab.db, write=False) as uow:
        reasons = [e["new"] for e in activity.entries(uow, "recipe", recipe["id"], PageRequest(MAX_LIMIT)).items if e["field"] == "reason"]
    assert reasons == ["cannot provision n2.lab.test: the job's own <kickstart> is allowed only to administrators "
                       "and the system's owner (setting job_kickstarts)"]
    assert [i["recipe"] for i in lab.admin.get("/systems/n2.lab.test/installations")[1]] == [recipes(first)[0]["id"]]


def test_a_site_that_allows_no_own_kickstart_refuses_the_job(db, tmp_path):
    lab = site(Lab(db, Settings(data_dir=str(tmp_path / "data"), job_kickstarts="nobody")))
    status, problem = lab.admin.post("/jobs", own_kickstart("n1.lab.test"))
    assert status == 422 and problem["detail"] == ("recipe_sets[0].recipes[0].kickstart: this site allows no job "
                                                   "its own kickstart (setting job_kickstarts)")


def test_notify_cc_addresses_get_the_jobs_mail(db, tmp_path, smtp):  # noqa: F811
    controller, inbox = smtp
    lab = site(Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1", smtp_port=controller.port)))
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    status, job = lab.alice.post("/jobs", {"whiteboard": "cc me", "notify": {"cc": ["qe@lab.test", "lead@lab.test"]},
                                           "recipe_sets": [{"recipes": [{}]}, {"recipes": [{}]}]})
    assert status == 201, job
    first, second = recipes(job)
    lab.alice.patch(f"/recipes/{first['id']}", {"status": "completed", "result": "pass"})
    lab.alice.patch(f"/recipes/{second['id']}", {"status": "aborted"})
    assert deliver_due(lab.db, START, lab.settings, senders(lab.settings)) == 3
    assert sorted(m.rcpt_tos[0] for m in inbox.messages) == ["alice@lab.test", "lead@lab.test", "qe@lab.test"]
    text = inbox.messages[0].content.decode()
    assert f"Subject: [lablease] job {job['id']} aborted: " in text and "cc me" in text

    status, problem = lab.alice.post("/jobs", {"notify": {"cc": ["not an address"]},
                                               "recipe_sets": [{"recipes": [{}]}]})
    assert status == 422 and problem["detail"] == ("notify.cc[0]: 'not an address' is not a mail address "
                                                   "(name@domain, without spaces, brackets or separators)")


def exported(lab, user: str, job_id: int):
    return lab.client.get(f"/api/v1/jobs/{job_id}.xml", headers={"Authorization": f"Bearer {lab.tokens[user]}"})


def stored(lab, job_id: int) -> dict:
    with UnitOfWork(lab.db, write=False) as uow:
        return uow.session.get(Job, job_id).document


def test_an_exported_job_resubmits_to_an_identical_job(lab):
    status, job = post_xml(lab, "alice", (CORPUS / "realistic_multihost_nfs.xml").read_bytes())
    assert status == 201, job
    response = exported(lab, "alice", job["id"])
    assert response.status_code == 200 and response.mimetype == "application/xml"
    assert b"<kernel_options_post" not in response.data and b'kernel_options_post="' in response.data
    lab.admin.post(f"/jobs/{job['id']}/cancel")
    status, again = post_xml(lab, "alice", response.data)
    assert status == 201, again
    assert stored(lab, again["id"]) == stored(lab, job["id"])
    assert again["warnings"] == job["warnings"]
    response = exported(lab, "bob", job["id"])
    assert response.status_code == 404  # only for the job's people


def test_a_job_from_before_documents_were_kept_is_exported_from_its_recipes(lab):
    from lablease.jobxml import parse_job_xml

    _, job = lab.alice.post("/jobs", {"whiteboard": "old", "recipe_sets": [{"priority": "High", "recipes": [
        {"host_requires": {"field": "hostname", "value": "n1.lab.test"}, "tasks": [{"name": "/a"}]}]}]})
    with UnitOfWork(lab.db) as uow:
        uow.session.get(Job, job["id"]).document = None
        uow.commit()
    document = parse_job_xml(exported(lab, "alice", job["id"]).data)
    assert document["whiteboard"] == "old" and document["recipe_sets"][0]["priority"] == "High"
    assert document["recipe_sets"][0]["recipes"][0]["host_requires"] == {"field": "hostname", "op": "=",
                                                                         "value": "n1.lab.test"}


def test_beakers_own_documents_are_accepted_and_an_extension_survives_the_export(lab):
    """Beaker's extension elements, an exported guest recipe, <image> in a custom distro, a <cc> twice and a
    guest without guestargs=: each submitted as it is, as Beaker takes it."""
    status, job = post_xml(lab, "alice", (CORPUS / "beaker_extension_elements.xml").read_bytes())
    assert status == 201, job
    assert [w["path"] for w in job["warnings"]] == ["/job/@retention_tag", "/job/{http://example.com/bar}option",
                                                    "/job/{http://example.com/foo}test"]
    response = exported(lab, "alice", job["id"])
    assert b'<b:option xmlns:b="http://example.com/bar">--foobar arbitrary</b:option>' in response.data
    lab.admin.post(f"/jobs/{job['id']}/cancel")
    status, again = post_xml(lab, "alice", response.data)
    assert status == 201 and stored(lab, again["id"]) == stored(lab, job["id"])
    lab.admin.post(f"/jobs/{again['id']}/cancel")

    status, job = post_xml(lab, "alice", (CORPUS / "beaker_exported_guest_recipe.xml").read_bytes())
    assert status == 201, job
    guest = "/job/recipeSet[1]/recipe[1]/guestrecipe[1]"
    assert {f"{guest}/@mac_address", f"{guest}/@status", f"{guest}/installation[1]"} <= {
        w["path"] for w in job["warnings"]}
    assert stored(lab, job["id"])["notify"]["cc"] == ["qe@lab.test", "virt-lead@lab.test"]
    assert [g["guestargs"] for r in recipes(job) for g in r["guests"]] == [""]
