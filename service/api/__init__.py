"""The REST API: ``create_app`` builds a FastAPI app with one router per resource.

Modules, in the order a request meets them:

- ``app``: :func:`create_app`, the factory wiring settings, state, metrics, middleware, routers.
- ``hooks``: the default hooks (loader, readiness, snapshot marker and runner, history).
- ``app_context``: :class:`ApiContext`, what one app holds, and how it reloads its state.
- ``state``: the immutable current state (frame, providers, tag) and its holder.
- ``metrics``: the app's Prometheus registry and the middleware timing every request.
- ``input_limits``: the body size limit (413), list limits and the bounded, strict-JSON 422.
- ``offers_cache``: finished ``/v1/offers`` answers by canonical query, their ETag/304 rule.
- ``offers_query``: the query parameters of ``/v1/offers``, validated and made canonical.
- ``answer_schema``: the pydantic models of the answer, the one declaration of its shape.
- ``answers``: a parsed query ranked, shaped by those models and serialized to bytes.
- ``deps``: the ``Annotated`` dependencies the routers declare.
- ``routers/<resource>``: one router per resource (offers, estimate, gpus, providers, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` imported when first asked for: importing the package imports no
    FastAPI."""
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
