"""Check the collection as Galaxy, Automation Hub and partner certification do, on the built artifact.

    certify.py galaxy-importer        galaxy-importer with its lint on (scripts/certify/galaxy-importer.cfg)
    certify.py docs                   antsibull-docs lint-collection-docs --plugin-docs
    certify.py execution-environment  ansible-builder introspect + create from meta/execution-environment.yml
    certify.py changelog              antsibull-changelog lint, the changelog of galaxy.yml's version, CHANGELOG.rst
    certify.py readme                 README.md: the partner requirements' sections, links that work on Automation Hub

Each builds the artifact with `ansible-galaxy collection build` (galaxy.yml's build_ignore applies) and
works on it, or on it extracted into a temporary ansible_collections/lablease/lab tree: what is checked
is what users install. Run with the python of the certification venv (.venv/tools/certification, made by
`make certification-tools`); the tools are found beside it. Exits 1 with the findings on any problem.
See docs/ansible.md, "Certification and releases".
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(sys.executable).parent  # the certification venv's bin/
IMPORTER_CONFIG = ROOT / "scripts" / "certify" / "galaxy-importer.cfg"
# galaxy-importer logs INFO lines bare and everything else as "LEVEL: message"; ansible-lint's findings come
# as WARNING lines, a failed import or a crashed tool as ERROR.
IMPORTER_PROBLEM = re.compile(r"^(WARNING|ERROR|CRITICAL):")


def run(cmd, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH="%s:%s" % (TOOLS, os.environ.get("PATH", "")))
    env.update(kwargs.pop("env", {}))
    return subprocess.run(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)


def build(work: Path) -> Path:
    """The artifact, built into work/."""
    done = run([TOOLS / "ansible-galaxy", "collection", "build", "--force", "--output-path", work, ROOT])
    if done.returncode:
        sys.exit("ansible-galaxy collection build failed:\n" + done.stdout)
    return next(work.glob("lablease-lab-*.tar.gz"))


def extract(artifact: Path, work: Path) -> Path:
    """The artifact as an installed collection: work/collections/ansible_collections/lablease/lab."""
    tree = work / "collections" / "ansible_collections" / "lablease" / "lab"
    tree.mkdir(parents=True)
    with tarfile.open(artifact) as tar:
        tar.extractall(tree, filter="data")
    return tree


def fail(what: str, findings: list[str]) -> int:
    print("\n%s: %d problem(s):" % (what, len(findings)))
    for line in findings:
        print("  " + line)
    return 1


def galaxy_importer(work: Path) -> int:
    artifact = build(work)
    tmp = work / "importer-tmp"
    tmp.mkdir()
    done = run([TOOLS / "python", "-m", "galaxy_importer.main", artifact], cwd=work, env={
        "GALAXY_IMPORTER_CONFIG": str(IMPORTER_CONFIG),
        "GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP": str(tmp),
        "GALAXY_IMPORTER_TMP_ROOT_DIR": str(tmp),
    })
    print(done.stdout.rstrip())
    findings = [line for line in done.stdout.splitlines() if IMPORTER_PROBLEM.match(line)]
    if done.returncode or "Importer processing completed successfully" not in done.stdout:
        findings.append("the import did not complete (exit status %d)" % done.returncode)
    return fail("galaxy-importer", findings) if findings else 0


def docs(work: Path) -> int:
    tree = extract(build(work), work)
    done = run([TOOLS / "antsibull-docs", "lint-collection-docs", "--plugin-docs", "--validate-collection-refs", "all",
                "--disallow-unknown-collection-refs", tree],
               env={"ANSIBLE_COLLECTIONS_PATH": str(work / "collections")})
    print(done.stdout.rstrip() or "antsibull-docs lint-collection-docs --plugin-docs: no problem")
    findings = done.stdout.strip().splitlines()
    if done.returncode and not findings:
        findings = ["exit status %d" % done.returncode]
    return fail("antsibull-docs", findings) if findings else 0


def requirement_lines(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def execution_environment(work: Path) -> int:
    """The collection's EE definition as ansible-builder reads it in both of its roles.

    Installed in an image, ansible-builder's introspection reads meta/execution-environment.yml's
    `python` and `system` files relative to the collection root; as a definition of its own, paths are
    relative to the definition's folder. So the definition is copied to the collection root, where both
    readings name the same files, and `ansible-builder create` turns it into a build context.
    """
    tree = extract(build(work), work)
    definition = yaml.safe_load((tree / "meta" / "execution-environment.yml").read_text())
    findings = []
    if definition.get("version") != 3:
        findings.append("meta/execution-environment.yml: version is %r, not 3" % definition.get("version"))
    deps = definition.get("dependencies", {})
    wanted = {}
    for kind in ("python", "system"):
        name = deps.get(kind)
        if not isinstance(name, str) or not (tree / name).is_file():
            findings.append("meta/execution-environment.yml: dependencies.%s names no file of the collection "
                            "(%r, relative to the collection root)" % (kind, name))
        else:
            wanted[kind] = requirement_lines(tree / name)
    if findings:
        return fail("execution environment", findings)

    seen = run([TOOLS / "ansible-builder", "introspect", work / "collections"])
    print(seen.stdout.rstrip())
    if seen.returncode:
        return fail("execution environment", ["ansible-builder introspect: exit status %d" % seen.returncode])
    found = yaml.safe_load(seen.stdout.split("\n", 1)[1])  # after the "# Dependency data for" line
    for kind, lines in wanted.items():
        for line in lines:
            if "%s  # from collection lablease.lab" % line not in (found.get(kind) or []):
                findings.append("ansible-builder introspect does not find %s need %r of lablease.lab" % (kind, line))

    (tree / "execution-environment.yml").write_text((tree / "meta" / "execution-environment.yml").read_text())
    context = work / "context"
    made = run([TOOLS / "ansible-builder", "create", "-f", "execution-environment.yml", "-c", context,
                "--output-filename", "Containerfile"], cwd=tree)
    print(made.stdout.rstrip())
    if made.returncode:
        findings.append("ansible-builder create: exit status %d" % made.returncode)
    else:
        if not (context / "Containerfile").is_file():
            findings.append("the build context has no Containerfile")
        for kind, copy in (("python", "requirements.txt"), ("system", "bindep.txt")):
            present = set(requirement_lines(context / "_build" / copy)) if (context / "_build" / copy).is_file() else set()
            findings += ["the build context's _build/%s lacks %r" % (copy, line)
                         for line in wanted[kind] if line not in present]
    return fail("execution environment", findings) if findings else 0


def changelog(work: Path) -> int:
    """The fragments lint clean, galaxy.yml's version is released, and CHANGELOG.rst is what the changes give.

    `antsibull-changelog release` writes changelogs/changelog.yaml and CHANGELOG.rst together; a version bumped
    in galaxy.yml without a release, or a CHANGELOG.rst edited by hand, fails here.
    """
    findings = []
    for cmd in (["lint"], ["lint-changelog-yaml", "changelogs/changelog.yaml"]):
        done = run([TOOLS / "antsibull-changelog"] + cmd, cwd=ROOT)
        findings += ["antsibull-changelog %s: %s" % (cmd[0], line) for line in done.stdout.strip().splitlines()]
        if done.returncode and not done.stdout.strip():
            findings.append("antsibull-changelog %s: exit status %d" % (cmd[0], done.returncode))
    version = str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"])
    releases = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text()).get("releases") or {}
    if version not in releases:
        findings.append("galaxy.yml's version %s has no release in changelogs/changelog.yaml "
                        "(antsibull-changelog release --version %s)" % (version, version))
    copy = work / "collection"
    (copy / "changelogs").mkdir(parents=True)
    for name in ("galaxy.yml", "changelogs/config.yaml", "changelogs/changelog.yaml"):
        (copy / name).write_text((ROOT / name).read_text())
    done = run([TOOLS / "antsibull-changelog", "generate"], cwd=copy)
    if done.returncode:
        findings.append("antsibull-changelog generate: " + done.stdout.strip())
    elif (copy / "CHANGELOG.rst").read_text() != (ROOT / "CHANGELOG.rst").read_text():
        findings.append("CHANGELOG.rst differs from what changelogs/changelog.yaml gives (antsibull-changelog generate)")
    if not findings:
        print("antsibull-changelog: fragments lint clean, %s released, CHANGELOG.rst current" % version)
    return fail("changelog", findings) if findings else 0


# The sections the partner requirements ask of a collection's README (their docs/readmes.md), as words a
# heading of README.md must contain.
README_SECTIONS = ("requirements", "installation", "use cases", "testing", "support", "release notes", "license")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)[^)]*\)|^\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def readme(work: Path) -> int:
    """Automation Hub renders README.md outside the repository: every link must be absolute, and the ones
    into this repository (galaxy.yml's `repository`, /blob/main/ or /raw/main/) must name a file that exists."""
    text = (ROOT / "README.md").read_text()
    headings = [line.lstrip("#").strip().lower() for line in text.splitlines() if line.startswith("#")]
    findings = ["README.md has no section on %s (a heading with those words)" % want
                for want in README_SECTIONS if not any(want in heading for heading in headings)]
    base = str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["repository"]).rstrip("/")
    ours = re.compile(re.escape(base) + r"/(?:blob|raw)/main/([^#?]+)")
    for match in MARKDOWN_LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if not re.match(r"(https?://|mailto:)", target):
            findings.append("README.md: link %r is relative; Automation Hub renders the README outside the "
                            "repository: use %s/blob/main/..." % (target, base))
        elif ours.match(target) and not (ROOT / ours.match(target).group(1)).exists():
            findings.append("README.md: link %r names no file of the repository" % target)
    if not findings:
        print("README.md: %d sections present, every link absolute" % len(README_SECTIONS))
    return fail("readme", findings) if findings else 0


CHECKS = {"galaxy-importer": galaxy_importer, "docs": docs, "execution-environment": execution_environment,
          "changelog": changelog, "readme": readme}


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in CHECKS:
        print("usage: certify.py {%s}" % ",".join(CHECKS), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lablease-certify.") as work:
        return CHECKS[sys.argv[1]](Path(work))


if __name__ == "__main__":
    sys.exit(main())
