"""The REST API: ``create_app`` builds a FastAPI app with one router per resource."""

from .app import create_app

__all__ = ["create_app"]
