"""The hub's namespaces: one module each (`auth.py` for auth.*, `systems.py` for systems.* and /systems/...).

Every module here is imported by `beaker.registry.load()`; it registers what it serves with
`@xmlrpc("namespace.method")` and `@rest("GET", "/path/<arg>")` (beaker/README-dev.md says how).
"""
