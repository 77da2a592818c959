"""The WSGI application: routes, JSON in and out, auth, problem+json errors, OpenAPI."""
from .app import create_app

__all__ = ["create_app"]
