"""``gpuscout subscribe`` and ``gpuscout digest preview|send|confirm|unsubscribe``.

Settings, the engine and the SMTP client are built inside each command, never at import.
"""

from __future__ import annotations

import base64
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn
from urllib.parse import parse_qs, urlsplit

import typer
from pydantic import ValidationError

from ..settings import Settings, get_settings
from .errors import validation_message
from .saved_serve import (
    SERVE_OPTIONS,
    ScenarioOption,
    ServeOption,
    ServePrecisionOption,
    TokensPerDayOption,
    serve_body,
)
from .search_options import search_from_options, spelled_search_providers, with_search_options

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from gpuscout.service.digest.build import Digest

__all__ = ["engine_for", "fail", "inline_chart", "register"]

digest_app = typer.Typer(help="The weekly email digest: preview, send, confirm, unsubscribe.")


def fail(message: str, code: int = 2) -> NoReturn:
    typer.secho(message, err=True, fg="red")
    raise typer.Exit(code)


def engine_for(settings: Settings) -> Engine:
    from gpuscout.db.engine import make_engine
    from gpuscout.db.migrate import upgrade

    upgrade(settings.database_url)
    return make_engine(settings.database_url)


def _token(link_or_token: str) -> str:
    """The token of a confirm/unsubscribe link, or the argument itself if it is a token."""
    if "://" in link_or_token or "?" in link_or_token:
        tokens = parse_qs(urlsplit(link_or_token).query).get("token")
        if not tokens:
            fail("the link has no token")
        return tokens[0]
    return link_or_token.strip()


def inline_chart(digest: Digest) -> str:
    """The digest's HTML with the chart inlined as a ``data:`` URI (for a file preview)."""
    data = base64.b64encode(digest.chart_png).decode()
    return digest.html.replace(f"cid:{digest.chart_cid}", f"data:image/png;base64,{data}")


#: The subscription's fields as ``subscribe`` takes them, for its errors.
_OPTIONS = {"email": "--email", "name": "--name", "time_zone": "--tz", **SERVE_OPTIONS}


@with_search_options
def subscribe_command(
    email: Annotated[str, typer.Option(help="the address digests go to")],
    name: Annotated[str, typer.Option(help="a name for this digest")],
    time_zone: Annotated[str, typer.Option("--tz", help="IANA time zone of the schedule")] = "UTC",
    serve: ServeOption = None,
    serve_precision: ServePrecisionOption = "bf16",
    scenario: ScenarioOption = "offline",
    tokens_per_day: TokensPerDayOption = None,
    **search: Any,
) -> None:
    """Subscribe an address to a weekly digest; a confirmation link is mailed to it."""
    from gpuscout.pricing.names import UnknownName
    from gpuscout.service.digest.mail import SmtpSendError
    from gpuscout.service.digest.schedule import smtp_transport
    from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest

    settings = get_settings()
    try:
        req, job = search_from_options(search)
        request = SubscriptionRequest.model_validate(
            {
                "email": email,
                "name": name,
                "time_zone": time_zone,
                "requirement": req,
                "job": job,
                "serve": serve_body(serve, serve_precision, scenario, tokens_per_day),
            }
        )
    except ValidationError as exc:
        fail(f"invalid subscription: {validation_message(exc, _OPTIONS)}")
    except ValueError as exc:
        fail(f"invalid subscription: {exc}")
    try:
        requirement = spelled_search_providers(request.requirement, settings)
    except UnknownName as exc:
        fail(f"invalid subscription: {exc.message}")
    request = request.model_copy(update={"requirement": requirement})
    manager = SubscriptionManager(settings, engine_for(settings), smtp_transport(settings))
    try:
        record = manager.subscribe(request)
    except SmtpSendError as exc:
        fail(f"subscription stored but the confirmation mail failed: {exc}", 1)
    typer.echo(f"subscription {record.id} pending: a confirmation link was sent to {record.email}")


@digest_app.command("confirm")
def confirm_command(
    link: Annotated[str, typer.Argument(help="the confirmation link (or its token)")],
) -> None:
    """Confirm a subscription with the link from its confirmation mail."""
    from gpuscout.service.digest.subscriptions import SubscriptionManager
    from gpuscout.service.digest.tokens import TokenError

    settings = get_settings()
    manager = SubscriptionManager(settings, engine_for(settings), lambda _m: 0)
    try:
        record = manager.confirm(_token(link))
    except TokenError as exc:
        fail(str(exc))
    typer.echo(f"subscription {record.id} is {record.status.value}")


@digest_app.command("unsubscribe")
def unsubscribe_command(
    link: Annotated[str, typer.Argument(help="the unsubscribe link (or its token)")],
) -> None:
    """Unsubscribe with the link from a digest."""
    from gpuscout.service.digest.subscriptions import SubscriptionManager
    from gpuscout.service.digest.tokens import TokenError

    settings = get_settings()
    manager = SubscriptionManager(settings, engine_for(settings), lambda _m: 0)
    try:
        record = manager.unsubscribe(_token(link))
    except TokenError as exc:
        fail(str(exc))
    typer.echo(f"subscription {record.id} is {record.status.value}")


@digest_app.command("preview")
def preview_command(
    out: Annotated[Path, typer.Option("--out", help="HTML file to write")],
    subscription: Annotated[
        int | None,
        typer.Option("--subscription", min=1, max=2**63 - 1, help="id of a stored subscription"),
    ] = None,
    preset: Annotated[
        str | None, typer.Option(help="no stored subscription: an example with this preset")
    ] = None,
    hours: Annotated[float, typer.Option(help="job hours of the --preset example")] = 100.0,
    sample: Annotated[bool, typer.Option(help="use the bundled offline sample")] = False,
    text: Annotated[Path | None, typer.Option(help="also write the text part here")] = None,
) -> None:
    """Write one digest to an HTML file, the chart inlined as a data: URI."""
    from gpuscout.db.subscriptions import get_subscription
    from gpuscout.pricing import Job
    from gpuscout.pricing.requirement import preset as get_preset
    from gpuscout.service.current import load_current
    from gpuscout.service.digest.build import SubscriptionView
    from gpuscout.service.digest.compose import DigestComposer, subscription_view

    if (subscription is None) == (preset is None):
        fail("give exactly one of --subscription ID or --preset NAME")
    settings = get_settings()
    now = datetime.now(UTC)
    engine = None
    if subscription is not None:
        engine = engine_for(settings)
        record = get_subscription(engine, subscription)
        if record is None:
            fail(f"no subscription {subscription}")
        view = subscription_view(record)
    else:
        try:
            requirement = get_preset(preset or "")
        except KeyError as exc:
            fail(str(exc.args[0]))
        view = SubscriptionView(
            id=0,
            name=f"Example: {preset}",
            email="you@example.com",
            requirement=requirement,
            job=Job.for_hours(hours),
        )
        if not sample:
            engine = engine_for(settings)
    current = load_current(sample=sample, settings=settings)
    digest = DigestComposer(settings, current, now, engine=engine).digest(view)
    out.write_text(inline_chart(digest), encoding="utf-8")
    if text is not None:
        text.write_text(digest.text, encoding="utf-8")
    typer.echo(f"{digest.subject}\nwritten to {out}")


@digest_app.command("send")
def send_command(
    dry_run: Annotated[bool, typer.Option(help="build the due digests, send nothing")] = False,
) -> None:
    """Send every digest that is due now and not sent yet (exactly once per week)."""
    from gpuscout.service.digest.schedule import run_digests

    settings = get_settings()
    report = run_digests(settings, engine_for(settings), dry_run=dry_run)
    for o in report.outcomes:
        line = f"subscription {o.subscription_id} {o.week}: {o.status}"
        if o.message_id and o.status != "would_send":
            line += f" {o.message_id}"
        if o.error:
            line += f" ({o.error})"
        typer.echo(line)
    typer.echo(
        f"{report.sent} sent, {report.failed} failed, {report.count('would_send')} would send, "
        f"{report.count('skipped')} skipped, {report.count('invalid')} invalid"
    )
    if report.failed:
        sys.exit(1)


def register(app: typer.Typer) -> None:
    app.command("subscribe")(subscribe_command)
    app.add_typer(digest_app, name="digest")
