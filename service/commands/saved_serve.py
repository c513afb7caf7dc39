"""The serve request of a saved search (``subscribe``, ``alerts create``) as options.

``--serve MODEL`` makes the saved search a serving one (ranked by USD per million output
tokens, docs/serving.md); ``--serve-precision`` (``--precision`` is the training search's),
``--scenario`` and ``--tokens-per-day`` complete it. The request itself is validated by the
subscription's model, which names the option in its one-line error (:data:`SERVE_OPTIONS`).
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = [
    "SERVE_OPTIONS",
    "ScenarioOption",
    "ServeOption",
    "ServePrecisionOption",
    "TokensPerDayOption",
    "serve_body",
]

ServeOption = Annotated[
    str | None, typer.Option(help="a serving search: the model (gpuscout models lists them)")
]
ServePrecisionOption = Annotated[str, typer.Option(help="with --serve: bf16, fp8, fp4")]
ScenarioOption = Annotated[str, typer.Option(help="with --serve: offline, server, single_stream")]
TokensPerDayOption = Annotated[
    float | None, typer.Option(help="with --serve: output tokens a day to serve")
]

#: The serve request's fields as these options name them, for the one-line errors.
SERVE_OPTIONS = {
    "serve": "--serve",
    "serve.serve": "--serve",
    "serve.precision": "--serve-precision",
    "serve.scenario": "--scenario",
    "serve.tokens_per_day": "--tokens-per-day",
}


def serve_body(
    serve: str | None, precision: str, scenario: str, tokens_per_day: float | None
) -> dict[str, object] | None:
    """The ``serve`` field of the request the options make (``None``: no ``--serve``)."""
    if serve is None:
        return None
    body: dict[str, object] = {"serve": serve, "precision": precision, "scenario": scenario}
    if tokens_per_day is not None:
        body["tokens_per_day"] = tokens_per_day
    return body
