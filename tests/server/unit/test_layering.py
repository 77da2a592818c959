"""domain/ holds pure rules: importing it loads no database, web or XML library."""
import pkgutil
import subprocess
import sys

import lablease.domain


def test_domain_imports_only_the_standard_library():
    modules = [f"lablease.domain.{m.name}" for m in pkgutil.iter_modules(lablease.domain.__path__)]
    code = "; ".join(f"import {m}" for m in modules) + (
        "; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'werkzeug', 'lxml', 'jinja2', 'requests', 'yaml', 'isodate', 'psycopg')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert len(modules) >= 5
    assert result.stdout.strip() == "[]"
