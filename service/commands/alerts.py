"""``gpuscout alerts create|list|firings|run``: price alerts from the command line.

An alert is confirmed and ended with the digest's links: ``gpuscout digest confirm LINK``
and ``gpuscout digest unsubscribe LINK`` take an alert's links too. Settings, the engine and
the SMTP client are built inside each command, never at import.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from ..settings import get_settings
from .digest import engine_for, fail
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

__all__ = ["register"]

alerts_app = typer.Typer(help="Price alerts: create, list, firings, run.")


def _condition(
    below: str | None, metric: str, in_stock: bool, drop_pct: float | None
) -> dict[str, object]:
    chosen = [below is not None, in_stock, drop_pct is not None]
    if sum(chosen) != 1:
        fail("give exactly one of --below, --in-stock, --drop-pct")
    if below is not None:
        try:
            return {"kind": "below", "metric": metric, "threshold": Decimal(below)}
        except InvalidOperation:
            fail(f"--below: not a number: {below!r}")
    if in_stock:
        return {"kind": "in_stock"}
    return {"kind": "drop", "metric": metric, "drop_pct": drop_pct}


#: The alert's fields as ``alerts create`` takes them, for its errors.
_OPTIONS = {
    "email": "--email",
    "name": "--name",
    "condition.metric": "--metric",
    "condition.threshold": "--below",
    "condition.drop_pct": "--drop-pct",
    "quiet_minutes": "--quiet-minutes",
    "webhooks": "--webhook",
    **SERVE_OPTIONS,
}


@alerts_app.command("create")
@with_search_options
def create_command(
    email: Annotated[str, typer.Option(help="the address alerts go to")],
    name: Annotated[str, typer.Option(help="a name for this alert")],
    below: Annotated[
        str | None, typer.Option(help="fire at or below this many USD (in --metric)")
    ] = None,
    in_stock: Annotated[bool, typer.Option(help="fire when a qualifying offer is available")] = (
        False
    ),
    drop_pct: Annotated[
        float | None, typer.Option(help="fire this % or more below the 7-day median")
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            help="usd_per_gpu_hour | usd_per_effective_tflop_hour | job_cost_usd |"
            " usd_per_m_tokens (with --serve)"
        ),
    ] = "usd_per_gpu_hour",
    serve: ServeOption = None,
    serve_precision: ServePrecisionOption = "bf16",
    scenario: ScenarioOption = "offline",
    tokens_per_day: TokensPerDayOption = None,
    quiet_minutes: Annotated[
        int | None, typer.Option(help="no firing sooner after one (default: the setting)")
    ] = None,
    webhook: Annotated[
        list[str] | None, typer.Option(help="a URL POSTed a signed JSON body (repeatable)")
    ] = None,
    **search: Any,
) -> None:
    """Create a price alert; a confirmation link is mailed to the address."""
    from gpuscout.pricing.names import UnknownName
    from gpuscout.service.alerts.manager import AlertLimitExceeded, AlertRequest, create_alert
    from gpuscout.service.digest.limits import SubscribeRateLimited
    from gpuscout.service.digest.mail import SmtpSendError
    from gpuscout.service.digest.schedule import smtp_transport
    from gpuscout.service.digest.subscriptions import SubscriptionManager

    settings = get_settings()
    condition = _condition(below, metric, in_stock, drop_pct)
    serving = serve_body(serve, serve_precision, scenario, tokens_per_day)
    try:
        req, job = search_from_options(search)
        request = AlertRequest.model_validate(
            {
                "email": email,
                "name": name,
                "requirement": req,
                "job": job,
                "condition": condition,
                "serve": serving,
                "quiet_minutes": quiet_minutes,
                "webhooks": tuple(webhook or ()),
            }
        )
    except ValidationError as exc:
        fail(f"invalid alert: {validation_message(exc, _OPTIONS)}")
    except ValueError as exc:
        fail(f"invalid alert: {exc}")
    try:
        requirement = spelled_search_providers(request.requirement, settings)
    except UnknownName as exc:
        fail(f"invalid alert: {exc.message}")
    request = request.model_copy(update={"requirement": requirement})
    manager = SubscriptionManager(settings, engine_for(settings), smtp_transport(settings))
    try:
        created = create_alert(manager, request)
    except (AlertLimitExceeded, SubscribeRateLimited) as exc:
        fail(str(exc), 1)
    except ValueError as exc:
        fail(f"invalid alert: {exc}")
    except SmtpSendError as exc:
        fail(f"alert stored but the confirmation mail failed: {exc}", 1)
    typer.echo(
        f"alert {created.alert_id} pending: a confirmation link was sent to {created.record.email}"
    )
    for url, secret in created.webhook_secrets.items():
        typer.echo(f"webhook {url}: signing secret {secret} (shown only now)")


@alerts_app.command("list")
def list_command(
    email: Annotated[str, typer.Option(help="the address whose alerts to list")],
) -> None:
    """The alerts of an address: id, status, armed, firings, condition, name."""
    from gpuscout.db.alerts import alerts_for_address
    from gpuscout.service.alerts.evaluate import condition_of
    from gpuscout.service.alerts.message import describe_condition
    from gpuscout.service.digest.mail import InvalidAddressError, normalize_address

    try:
        address = normalize_address(email)
    except InvalidAddressError as exc:
        fail(str(exc))
    engine = engine_for(get_settings())
    for alert in alerts_for_address(engine, address):
        armed = "armed" if alert.armed else "fired"
        typer.echo(
            f"{alert.id}\t{alert.status}\t{armed}\t{alert.fire_count}\t"
            f"{describe_condition(condition_of(alert))}\t{alert.name}"
        )


@alerts_app.command("firings")
def firings_command(
    alert_id: Annotated[int, typer.Argument(help="the alert's id")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per firing")] = False,
) -> None:
    """The firings of one alert, newest first."""
    from gpuscout.db.alerts import firings, get_alert

    engine = engine_for(get_settings())
    if get_alert(engine, alert_id) is None:
        fail(f"no alert {alert_id}", 1)
    for f in firings(engine, alert_id):
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "seq": f.seq,
                        "fired_at": f.fired_at.isoformat(),
                        "value": f.value,
                        "baseline": f.baseline,
                        "offer": json.loads(f.offer_json),
                        "delivered": f.settled,
                    },
                    sort_keys=True,
                )
            )
        else:
            offer = json.loads(f.offer_json) or {}
            typer.echo(
                f"#{f.seq}\t{f.fired_at.isoformat()}\t{f.value}\t"
                f"{offer.get('provider')}/{offer.get('offer_id')}\t"
                f"{'delivered' if f.settled else 'pending'}"
            )


@alerts_app.command("run")
def run_command() -> None:
    """Evaluate every alert against the stored current offers and deliver (as the scheduler
    does after each snapshot)."""
    from gpuscout.service.alerts.run import run_alerts

    settings = get_settings()
    report = run_alerts(settings, engine_for(settings))
    e, d = report.evaluation, report.delivery
    typer.echo(
        f"{e.alerts} alert(s) over {e.searches} search(es) in {e.seconds:.2f} s: "
        f"{len(e.fired)} fired, {e.rearmed} re-armed, {e.quiet} quiet; "
        f"{len(d.mails)} mail(s), {len(d.webhooks)} webhook call(s)"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
