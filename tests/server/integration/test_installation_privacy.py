"""Installations are for their people; secret kickstart variables are never answered nor logged."""
from lablease.domain.paging import PageRequest
from lablease.config import Settings
from lablease.services.records import activity
from lablease.store.uow import UnitOfWork

from .conftest import Lab
from .test_provisioning_api import TREE, installer, provisionable

HASH = "$6$salt$Xy9hashedrootpw"
SECRETS = (HASH, "tok-4417", "ssh-ed25519-AAAAprivate", "8642")


def _site(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), secret_variables=("*_pin",)))
    provisionable(lab, netboot={"mac": "52:54:00:aa:bb:01", "ks_meta": "bmc_pin=8642 console=ttyS1"})
    lab.admin.post("/distro-trees", {**TREE, "ks_meta": "lang=de_DE.UTF-8 deploy_key=ssh-ed25519-AAAAprivate"})
    lab.alice.post("/reservations", {"system": "p1.lab.test", "duration": "8h"})
    status, install = lab.alice.post("/systems/p1.lab.test/provision", {
        "distro_tree": "Fedora-40", "ks_meta": f"root_password='{HASH}' api_token=tok-4417 packages=vim"})
    assert status == 202, install
    return lab, install


def test_only_the_installations_people_see_it(db, tmp_path):
    lab, install = _site(db, tmp_path)
    carol = lab.user("carol")
    lab.admin.patch("/systems/p1.lab.test", {"owner": "carol"})
    path = f"/installations/{install['id']}"
    for caller in (lab.alice, lab.admin, carol):  # the requester and holder, an admin, the system's owner
        status, shown = caller.get(path)
        assert status == 200 and shown["id"] == install["id"] and "kickstart" in shown
        assert [i["id"] for i in caller.get("/systems/p1.lab.test/installations")[1]] == [install["id"]]
    status, problem = lab.bob.get(path)
    assert status == 404 and problem["detail"] == f"no installation {install['id']}"
    assert lab.bob.get("/systems/p1.lab.test/installations") == (200, [])
    assert lab.bob.get("/installations/999999")[1]["detail"] == "no installation 999999"  # the same answer


def test_the_holder_of_the_reservation_sees_a_recipes_installation(lab):
    provisionable(lab, condition="automated")
    lab.admin.post("/distro-trees", TREE)
    lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}, "runtime_limit": 3600}]}]})
    [install] = lab.admin.get("/systems/p1.lab.test/installations")[1]
    assert lab.alice.get(f"/installations/{install['id']}")[0] == 200
    assert lab.bob.get(f"/installations/{install['id']}")[0] == 404


def test_secret_variables_are_masked_in_every_answer_and_the_activity_log(db, tmp_path):
    lab, install = _site(db, tmp_path)
    assert install["ks_meta"] == "root_password=******** api_token=******** packages=vim"
    _, shown = lab.alice.get(f"/installations/{install['id']}")
    assert "rootpw --iscrypted ********" in shown["kickstart"]
    lab.system("r1.lab.test", condition="automated")  # (a job no system could ever run is refused)
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{"ks_meta": "root_password=r3cipe-pw"}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]["id"]
    assert lab.admin.patch("/distro-trees/1", {"ks_meta": "lang=C root_password=tr33-pw"})[0] == 200
    answers = [caller.get(path)[1] for caller in (lab.alice, lab.admin) for path in (
        f"/installations/{install['id']}", "/systems/p1.lab.test/installations", "/distro-trees",
        "/distro-trees/1", "/systems/p1.lab.test", "/systems", f"/recipes/{recipe}",
        "/systems/p1.lab.test/activity")]
    with UnitOfWork(lab.db, write=False) as uow:
        answers.append(activity.entries(uow, "distro_tree", 1, PageRequest()).items)
    for answer in answers:
        for secret in (*SECRETS, "r3cipe-pw", "tr33-pw"):
            assert secret not in str(answer), (secret, answer)
    assert "bmc_pin=********" in str(lab.admin.get("/systems/p1.lab.test")[1]["netboot"])  # the site's pattern
    # the installer itself gets them, with its token, while it installs
    status, kickstart = installer(lab, install["kickstart_url"])
    assert status == 200 and f"rootpw --iscrypted {HASH}" in kickstart
