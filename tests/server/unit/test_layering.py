"""Dependencies point inward: domain/ and scheduler/ are pure, and every module imports on its own."""
import ast
import functools
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


@functools.cache  # each source is read once for all the checks below (they parse 250 files, some twice)
def _imported(module: str, typing_only: bool = True) -> tuple[tuple[str, int], ...]:
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
    return tuple(found)


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
    assert len(graph) > 80 and graph["lablease.services.lifecycle.jobs"]  # the graph is really read
    chains = [" -> ".join(chain) for chain in _cycles(graph)]
    assert chains == []



# services/ in parts a lab administrator would name, bottom first: a part imports only itself and the parts
# before it. What must follow in a part above goes there as an event through the handler table (handlers),
# which sits above what it calls. docs/architecture.md ("services/, by part") draws the order.
SERVICE_PARTS = ("records", "messages", "people", "catalog", "provisioning", "booking", "queue", "calendar",
                 "lifecycle", "handlers", "auth", "reads", "sealing")


def _part(module: str) -> str | None:
    """lablease.services.booking.reserve -> booking; lablease.services.handlers -> handlers."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["lablease", "services"] else None


def _upward(graph: dict[str, set[str]], order: tuple[str, ...]) -> list[str]:
    """Each import from a part to a part after it in `order`."""
    rank = {part: n for n, part in enumerate(order)}
    return sorted(f"{m} imports {t}" for m in graph for t in graph[m]
                  if _part(m) and _part(t) and rank[_part(t)] > rank[_part(m)])


def test_an_import_up_the_parts_is_found():
    """The check below can fail: a made-up graph importing up is reported, one importing down is not."""
    graph = {"lablease.services.records.due": {"lablease.services.booking.reserve"},
             "lablease.services.booking.reserve": {"lablease.services.records.activity"},
             "lablease.services.records.activity": set()}
    assert _upward(graph, ("records", "booking")) == [
        "lablease.services.records.due imports lablease.services.booking.reserve"]
    assert _upward(graph, ("booking", "records")) == [
        "lablease.services.booking.reserve imports lablease.services.records.activity"]


def test_services_parts_import_only_the_parts_below_them():
    import lablease.services

    graph = _import_graph([lablease.services])
    assert {_part(m) for m in graph} - {None} == set(SERVICE_PARTS)  # every part is placed, none is made up
    assert _upward(graph, SERVICE_PARTS) == []
    top = [m.name for m in pkgutil.iter_modules(lablease.services.__path__) if not m.ispkg]
    assert len(top) <= 8, f"{top}: services/ keeps at most 8 modules at its top, the rest in its parts"


def test_use_cases_take_the_unit_of_work_and_never_read_it_from_the_session():
    """One calling convention in services/: a function's first parameter is the unit of work, never a bare
    session; its settings are the unit of work's, never a parameter beside it; and nothing takes the unit of
    work or the settings back out of `session.info` (the event feed keeps its own pending rows there, for its
    rollback listener: services/records/feed.py)."""
    import lablease.services

    root = Path(lablease.services.__file__).parent
    sessions, lookups, twice = [], [], []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        twice += [f"{path.relative_to(root)}:{node.lineno} {node.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == "uow"
                  and "settings" in [a.arg for a in node.args.args]]  # the settings are the unit of work's
        sessions += [f"{path.relative_to(root)}:{node.lineno} {node.name}" for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == "session"
                     and node.name != "_drop_rolled_back"]  # SQLAlchemy calls that listener with its session
        lookups += [f"{path.relative_to(root)}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and ast.unparse(node.func).endswith("session.info.get")
                    and ast.unparse(node.args[0]) in ("'uow'", "'settings'")]
    assert len(list(root.rglob("*.py"))) > 50 and sessions == [] and lookups == [] and twice == []

# A parent that has imported only what lablease imports from outside itself (the standard library and the
# third-party libraries, named on its command line) forks one child per cycle, which imports what the cycle's
# modules import from outside it (all they reach in the import graph but one another), after checking it
# loads none of them (an import the graph does not show would make this unsound). That child forks a
# grandchild per module of the cycle: it imports that module first, with no module of its cycle loaded, and
# reports on a pipe whether it could. Python imports a module's packages before it, so a module whose package
# is on the cycle too is tried in a child of its package's run, once the package is imported, when that did
# not import it already (then the module's own run would be the package's, step for step). The libraries are
# paid for once, what a cycle stands on once per cycle (most of the server, for api/ and web/), a package once.
ALONE = """
import functools, importlib, json, os, sys
outside, cycles = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in outside:
    try:
        importlib.import_module(name)
    except Exception:  # an optional library (or one only some platforms have): the child will say
        pass
assert not [m for m in sys.modules if m == "lablease" or m.startswith("lablease.")]


def start(job):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            said = job()
        except BaseException as error:
            said = f"{type(error).__name__}: {error}"
        os.write(write, json.dumps(said).encode())
        os._exit(0)
    os.close(write)
    return pid, read


def said(pid, read, status=None):
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read()
    if status is None:
        _, status = os.waitpid(pid, 0)
    return json.loads(text) if text and not status else f"the child ended with status {status}"


def package(name, members):
    # The nearest package of name on its cycle, or None.
    parts = name.split(".")
    return next((p for p in (".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)) if p in members), None)


def try_first(names, members):
    # Each of names in a child of its own: imported first, then the modules of its package that it did not load.
    failures = {}
    for name in names:
        if name in sys.modules:
            continue
        result = said(*start(functools.partial(first, name, members)))
        if isinstance(result, str):
            failures[name] = result
            result = {m: f"its package {name} could not be imported" for m in members if m.startswith(name + ".")}
        failures.update(result)
    return failures


def first(name, members):
    importlib.import_module(name)
    return try_first([m for m in members if package(m, members) == name], members)


def cycle(below, members):
    for name in below:
        try:
            importlib.import_module(name)
        except BaseException as error:
            return dict.fromkeys(members, f"{type(error).__name__}: {error} (importing {name}, which it imports)")
    loaded = {m: "loaded by what it imports from outside its cycle: the import graph misses an import"
              for m in members if m in sys.modules}
    return {**loaded, **try_first([m for m in members if package(m, members) is None and m not in loaded], members)}


failures, running, pending = {}, {}, list(reversed(cycles))
while pending or running:
    while pending and len(running) < max(2, os.cpu_count() or 1):
        below, members = pending.pop()
        pid, read = start(functools.partial(cycle, below, members))
        running[pid] = (members, read)
    pid, status = os.wait()
    members, read = running.pop(pid)
    result = said(pid, read, status)
    failures.update(result if isinstance(result, dict) else dict.fromkeys(members, result))
print(json.dumps(failures))
"""


def _outside(modules: list[str]) -> list[str]:
    """What the modules import from outside lablease (the standard library and third-party libraries)."""
    return sorted({name for m in modules for name, _ in _imported(m, typing_only=False)
                   if name.split(".")[0] not in ("lablease", "__future__")})


def _import_each_alone(cycles: list[tuple[list[str], list[str]]], outside: list[str]) -> dict[str, str]:
    """Module -> why it could not be imported first, for each that could not; cycles are (what a cycle's
    modules import from outside it, the modules), the largest first."""
    result = subprocess.run([sys.executable, "-c", ALONE, json.dumps(outside), json.dumps(cycles)],
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


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module importing start runs (start too, when it is on a cycle)."""
    seen, stack = set(), list(graph[start])
    while stack:
        if (name := stack.pop()) not in seen:
            seen.add(name)
            stack.extend(graph[name])
    return seen


def _on_a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """The modules that can reach themselves through the graph."""
    return sorted(module for module in graph if module in _reached(graph, module))


def _cycle_groups(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """The modules on a cycle, grouped by cycle (those that reach one another), each group with what its
    modules import from outside it; the groups that import the most first (they take longest)."""
    found, seen = [], set()
    for module in _on_a_cycle(graph):
        if module not in seen:
            reached = _reached(graph, module)
            members = sorted(name for name in reached if module in _reached(graph, name))
            found.append((sorted(reached - set(members)), members))
            seen.update(members)
    return sorted(found, key=lambda cycle: -len(cycle[0]) * len(cycle[1]))


def test_every_module_imports_on_its_own():
    """Each module on an import cycle imported first, with no module of its cycle loaded before it (a cycle that
    only works in one order shows here). A module on no cycle needs no such run: what it imports is loaded
    whole before its body goes on, so it imports alone whenever each module it imports does, and those on a
    cycle are each tried here (a quarter of the modules). For the same reason what a cycle imports from outside
    it is loaded once for the cycle, and a package on a cycle once for its modules (see ALONE): the children
    take 5 s of CPU where one per module, each importing all it reaches, took 16 s."""
    modules = ["lablease"] + _modules(lablease)
    assert len(modules) > 100
    cycles = _cycle_groups(_with_packages(_import_graph([lablease])))
    on_a_cycle = [name for _, members in cycles for name in members]
    assert {"lablease.store.tables", "lablease.api.app", "lablease.config"} <= set(on_a_cycle)
    assert _import_each_alone(cycles, _outside(modules)) == {}


def test_the_modules_on_import_cycles_are_found():
    """A package whose __init__ imports one of its modules is on a cycle with it; each cycle comes with what
    it imports from outside it."""
    graph = _with_packages({"a": {"b"}, "b": {"c"}, "c": {"a", "e"}, "d": {"a"}, "e": set(), "f": {"f.g"},
                            "f.g": {"e"}, "h": set(), "h.i": set()})
    assert _on_a_cycle(graph) == ["a", "b", "c", "f", "f.g"]
    assert _cycle_groups(graph) == [(["e"], ["a", "b", "c"]), (["e"], ["f", "f.g"])]


def test_a_module_that_cannot_be_imported_on_its_own_is_named(tmp_path, monkeypatch):
    """The check above can fail: of two modules that import each other, the one whose name the other takes
    at its top imports fine first (`second`), the other (`first`) is named with its error; so is a module
    whose import fails outright; a module of a package on its cycle that fails once the package is imported
    (`late`: the package itself and the module it imports are fine), and the modules of a package that
    cannot be imported; and a module of a cycle that what the cycle imports from outside it loaded (the
    import graph, which chose what to load first, missed an import)."""
    files = {
        "__init__.py": "", "base.py": "B = 1\n", "first.py": "from . import second\nfrom .base import B\nA = 1\n",
        "second.py": "from .first import A\n", "broken.py": "import cycle_example.no_such_module\n",
        "hidden.py": "import importlib\nimportlib.import_module('cycle_example.other')\n", "other.py": "",
        "inner/__init__.py": "from . import early\n", "inner/early.py": "import cycle_example.inner\n",
        "inner/late.py": "from cycle_example.inner import missing\n",
        "gone/__init__.py": "raise RuntimeError('no')\n", "gone/sub.py": "import cycle_example.gone\n",
    }
    for name, text in files.items():
        (tmp_path / "cycle_example" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cycle_example" / name).write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    below = ["cycle_example", "cycle_example.base"]
    named = [f"cycle_example.{name}" for name in ("first", "second", "broken", "other", "inner", "inner.early",
                                                  "inner.late", "gone", "gone.sub")]
    failures = _import_each_alone([(below, named[:2]), ([], named[2:3]), (below + ["cycle_example.hidden"], named[3:4]),
                                   (below, named[4:7]), (below, named[7:])], ["json", "importlib"])
    assert sorted(failures) == ["cycle_example.broken", "cycle_example.first", "cycle_example.gone",
                                "cycle_example.gone.sub", "cycle_example.inner.late", "cycle_example.other"]
    assert failures["cycle_example.first"].startswith("ImportError: cannot import name 'A'")
    assert failures["cycle_example.broken"].startswith("ModuleNotFoundError: No module named 'cycle_example.no_")
    assert failures["cycle_example.other"].startswith("loaded by what it imports from outside its cycle")
    assert failures["cycle_example.inner.late"].startswith("ImportError: cannot import name 'missing'")
    assert failures["cycle_example.gone"] == "RuntimeError: no"
    assert failures["cycle_example.gone.sub"] == "its package cycle_example.gone could not be imported"


def test_beaker_hub_reaches_the_database_only_through_use_cases():
    """Beaker's hub is an adapter like the API: it calls use cases and holds no table, no SQLAlchemy."""
    import lablease.beaker

    modules = _modules(lablease.beaker)
    offending = [f"{m}:{line} imports {name}" for m in modules for name, line in _imported(m)
                 if name.split(".")[0] == "sqlalchemy"
                 or name.startswith("lablease.store") and name not in ("lablease.store.uow", "lablease.store.outage")]
    assert len(modules) >= 5 and offending == []
