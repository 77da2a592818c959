"""Dependencies point inward: domain/ and scheduler/ are pure, and every module imports on its own."""
import ast
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import lablease
import lablease.domain
import lablease.scheduler

PURE_PACKAGES = (lablease.domain, lablease.scheduler)
PURE_NAMES = {package.__name__ for package in PURE_PACKAGES}


# Alembic's scripts run inside Alembic's context (`alembic.context.config`), never by import.
ALEMBIC_SCRIPTS = ("lablease.store.migrations.env", "lablease.store.migrations.versions.")


def _modules(package) -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
                  if not m.name.startswith(ALEMBIC_SCRIPTS))


def _imported(module: str, typing_only: bool = True) -> list[tuple[str, int]]:
    """Every module a source file imports, relative imports resolved against its package (without
    `typing_only`, those under `if TYPE_CHECKING:` are left out: they never run)."""
    source = Path(sys.modules["lablease"].__file__).parent.joinpath(*module.split(".")[1:])
    path = source / "__init__.py" if source.is_dir() else source.with_suffix(".py")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    tree = ast.parse(path.read_text(), str(path))
    if not typing_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            found += [(name, node.lineno)] if node.module else [(f"{name}.{a.name}", node.lineno) for a in node.names]
    return found


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if top == "lablease":
        return any(name == pure or name.startswith(f"{pure}.") for pure in PURE_NAMES)
    return top in sys.stdlib_module_names or top == "__future__"


def test_domain_and_scheduler_import_only_the_standard_library_and_each_other():
    modules = [m for package in PURE_PACKAGES for m in _modules(package)]
    assert any(m.startswith("lablease.scheduler.") for m in modules) and len(modules) >= 10
    offending = [f"{m}:{line} imports {name}" for m in modules for name, line in _imported(m) if not _allowed(name)]
    assert offending == []


def test_views_reach_the_database_only_through_use_cases():
    """A view parses input and calls a use case: of store/ it sees only the unit of work it passes on."""
    import lablease.api.views

    views = _modules(lablease.api.views)
    offending = [f"{m}:{line} imports {name}" for m in views for name, line in _imported(m)
                 if name.split(".")[0] == "sqlalchemy"
                 or name.startswith("lablease.store") and name != "lablease.store.uow"]
    assert len(views) >= 5 and offending == []


def test_web_pages_reach_the_database_only_through_use_cases():
    """The web's views and its request handling, like the API's views: no table, no SQLAlchemy, no rule.
    (store.outage reads nothing: it tells a database outage, a 503, from a bug, as for the API.)"""
    import lablease.web

    modules = _modules(lablease.web)
    allowed = ("lablease.store.uow", "lablease.store.secrets", "lablease.store.outage")
    offending = [f"{m}:{line} imports {name}" for m in modules for name, line in _imported(m)
                 if name.split(".")[0] == "sqlalchemy" or name.startswith("lablease.store") and name not in allowed]
    assert len(modules) >= 8 and offending == []


def test_importing_domain_and_scheduler_loads_no_third_party_library():
    """The import graph above, confirmed by what a fresh interpreter actually loads."""
    modules = [m for package in PURE_PACKAGES for m in _modules(package)]
    code = "; ".join(f"import {m}" for m in modules) + (
        "; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'werkzeug', 'lxml', 'jinja2', 'requests', 'yaml', 'isodate', 'psycopg')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


LAYERS = ("services", "domain", "scheduler", "store")


def _import_graph(packages) -> dict[str, set[str]]:
    """Module -> the modules of `packages` it imports when it runs (at its top or in a function)."""
    modules = {m for package in packages for m in [package.__name__] + _modules(package)}

    def known(name: str) -> str | None:  # `from .tables import System` -> lablease.store.tables
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    return {m: {known(name) for name, _ in _imported(m, typing_only=False) if known(name) not in (None, m)}
            for m in modules}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One chain per import cycle found by a depth-first walk, e.g. [a, b, c, a]."""
    found, done, path = [], set(), []

    def walk(module: str) -> None:
        path.append(module)
        for target in sorted(graph[module]):
            if target in path:
                found.append(path[path.index(target):] + [target])
            elif target not in done:
                walk(target)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module)
    return found


def test_cycles_are_found_as_chains():
    """The check below can fail: a made-up graph with a cycle is reported as its chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_use_cases_rules_and_storage_import_without_cycles():
    """services/, domain/, scheduler/ and store/ import one another in one direction only: what must
    follow elsewhere is an event (services/handlers.py), never an import back, not even one deferred
    into a function."""
    import lablease.services
    import lablease.store

    packages = [getattr(lablease, name) for name in LAYERS]
    graph = _import_graph(packages)
    assert len(graph) > 80 and graph["lablease.services.jobs"]  # the graph is really read
    chains = [" -> ".join(chain) for chain in _cycles(graph)]
    assert chains == []


# A parent that has imported only what lablease imports from outside itself (the standard library and the
# third-party libraries, named on its command line) forks one child per lablease module: the child imports
# that module first, with no lablease module loaded, and reports on a pipe whether it could. The libraries
# are paid for once instead of once per module; each child still runs its module's whole lablease import.
ALONE = """
import importlib, json, os, sys
outside, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in outside:
    try:
        importlib.import_module(name)
    except Exception:  # an optional library (or one only some platforms have): the child will say
        pass
assert not [m for m in sys.modules if m == "lablease" or m.startswith("lablease.")]
failures, running, pending = {}, {}, list(modules)
while pending or running:
    while pending and len(running) < max(2, os.cpu_count() or 1):
        name, (read, write) = pending.pop(), os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                importlib.import_module(name)
                said = b""
            except BaseException as error:
                said = f"{type(error).__name__}: {error}".encode()
            os.write(write, said)
            os._exit(0)
        os.close(write)
        running[pid] = (name, read)
    pid, status = os.wait()
    name, read = running.pop(pid)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    if said or status:
        failures[name] = said or f"the child ended with status {status}"
print(json.dumps(failures))
"""


def _outside(modules: list[str]) -> list[str]:
    """What the modules import from outside lablease (the standard library and third-party libraries)."""
    return sorted({name for m in modules for name, _ in _imported(m, typing_only=False)
                   if name.split(".")[0] not in ("lablease", "__future__")})


def _import_each_alone(modules: list[str], outside: list[str]) -> dict[str, str]:
    """Module -> why it could not be imported on its own, for each that could not."""
    result = subprocess.run([sys.executable, "-c", ALONE, json.dumps(outside), json.dumps(modules)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _with_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with what importing a module also runs first: its packages' __init__, and those of what it
    imports."""
    def packages(name: str) -> set[str]:
        parts = name.split(".")
        return {".".join(parts[:n]) for n in range(1, len(parts))} & graph.keys()

    return {module: (targets | packages(module) | {p for t in targets for p in packages(t)}) - {module}
            for module, targets in graph.items()}


def _on_a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """The modules that can reach themselves through the graph."""
    def reached(start: str) -> set[str]:
        seen, stack = set(), list(graph[start])
        while stack:
            if (name := stack.pop()) not in seen:
                seen.add(name)
                stack.extend(graph[name])
        return seen

    return sorted(module for module in graph if module in reached(module))


def test_every_module_imports_on_its_own():
    """Each module on an import cycle imported first, with no lablease module loaded before it (a cycle that
    only works in one order shows here). A module on no cycle needs no such run: what it imports is loaded
    whole before its body goes on, so it imports alone whenever each module it imports does, and those on a
    cycle are each tried here (a quarter of the modules, a quarter of the time of importing every one)."""
    modules = ["lablease"] + _modules(lablease)
    assert len(modules) > 100
    on_a_cycle = _on_a_cycle(_with_packages(_import_graph([lablease])))
    assert {"lablease.store.tables", "lablease.api.app", "lablease.config"} <= set(on_a_cycle)
    assert _import_each_alone(on_a_cycle, _outside(modules)) == {}


def test_the_modules_on_import_cycles_are_found():
    """A package whose __init__ imports one of its modules is on a cycle with it."""
    graph = _with_packages({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set(), "f": {"f.g"}, "f.g": set(),
                            "h": set(), "h.i": set()})
    assert _on_a_cycle(graph) == ["a", "b", "c", "f", "f.g"]


def test_a_module_that_cannot_be_imported_on_its_own_is_named(tmp_path, monkeypatch):
    """The check above can fail: of two modules that import each other, the one whose name the other takes
    at its top imports fine first (`second`), the other (`first`) is named with its error; so is a module
    whose import fails outright."""
    package = tmp_path / "cycle_example"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("from . import second\nA = 1\n")
    (package / "second.py").write_text("from .first import A\n")
    (package / "broken.py").write_text("import cycle_example.no_such_module\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    failures = _import_each_alone(["cycle_example.first", "cycle_example.second", "cycle_example.broken"],
                                  ["json", "importlib"])
    assert sorted(failures) == ["cycle_example.broken", "cycle_example.first"]
    assert failures["cycle_example.first"].startswith("ImportError: cannot import name 'A'")
    assert failures["cycle_example.broken"].startswith("ModuleNotFoundError: No module named 'cycle_example.no_")


def test_beaker_hub_reaches_the_database_only_through_use_cases():
    """Beaker's hub is an adapter like the API: it calls use cases and holds no table, no SQLAlchemy."""
    import lablease.beaker

    modules = _modules(lablease.beaker)
    offending = [f"{m}:{line} imports {name}" for m in modules for name, line in _imported(m)
                 if name.split(".")[0] == "sqlalchemy"
                 or name.startswith("lablease.store") and name not in ("lablease.store.uow", "lablease.store.outage")]
    assert len(modules) >= 5 and offending == []
