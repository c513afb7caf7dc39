"""``gpuscout providers``, ``parse`` and ``snapshot``: running the adapters by hand."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpuscout.adapters import get_adapter
from gpuscout.adapters.base import UNREACHABLE, Adapter, AdapterError, unreachable
from gpuscout.adapters.collect import ProviderRun, RunStatus
from gpuscout.adapters.field_coverage import (
    GROUP_LABELS,
    ProviderCoverage,
    percent_text,
    total_coverage,
)
from gpuscout.adapters.gpus import unknown_gpu_names
from gpuscout.adapters.sample import replay_sample, sample_entries, sample_note
from gpuscout.adapters.schema import FIELD_GROUPS, Offer
from gpuscout.pricing.display import decimal_text, figure_text

from ..provider_facts import ProviderFacts
from ..settings import Settings, get_settings

if TYPE_CHECKING:
    from gpuscout.db.snapshots import SnapshotSummary
from .console import wide_console

__all__ = ["register"]

err = Console(stderr=True)


class ParseFormat(StrEnum):
    JSONL = "jsonl"
    TABLE = "table"


class CoverageFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


def price_text(offer: Offer) -> str:
    """The published price as people read it, at most six decimals (the stored quantum):
    ``0.246667 USD/hour/instance``, not ``0.24666666666666665``."""
    unit = f"{offer.price_currency}/{offer.price_unit.value}/{offer.price_basis.value}"
    return f"{decimal_text(offer.price_amount)} {unit}"


def offers_table(offers: list[Offer], title: str | None = None) -> Table:
    """Parsed offers, one row each; ids and names may be cut, figures never wrap."""
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("provider", "offer_id", "region", "gpu", "n", "term", "price", "usd/h"):
        numeric = col in {"n", "price", "usd/h"}
        table.add_column(
            col,
            justify="right" if numeric else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width=None if numeric else 30,
        )
    for o in offers:
        table.add_row(
            o.provider,
            o.offer_id,
            o.region or "",
            o.gpu_model or f"? {o.gpu_raw_name or ''}",
            f"{o.gpus:g}",
            o.term.value,
            price_text(o),
            figure_text(float(o.usd_per_hour), significant=3, decimals=2),
        )
    return table


def coverage_table(coverage: Mapping[str, ProviderCoverage]) -> Table:
    """Per provider (and all together), the share of its offers carrying each checklist group's
    fields: ten narrow columns, within 80."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0))
    table.add_column("provider", no_wrap=True, overflow="ellipsis", max_width=12)
    for label in ("offers", *GROUP_LABELS.values()):
        table.add_column(label, justify="right", no_wrap=True)
    for cov in [*coverage.values(), total_coverage(coverage)]:
        shares = [percent_text(cov.group_share(group)) for group in GROUP_LABELS]
        table.add_row(cov.provider, str(cov.offers), *shares)
    return table


def field_coverage_table(cov: ProviderCoverage) -> Table:
    """One provider's coverage field by field, under each group's share."""
    table = Table(
        title=f"{cov.provider}: {cov.offers} offer(s)", box=box.SIMPLE_HEAD, show_edge=False
    )
    table.add_column("group / field", no_wrap=True)
    table.add_column("offers", justify="right")
    table.add_column("share", justify="right")
    for group, fields in FIELD_GROUPS.items():
        table.add_row(f"[bold]{group}[/]", "", percent_text(cov.group_share(group)))
        for name in fields:
            table.add_row(f"  {name}", str(cov.filled[name]), percent_text(cov.field_share(name)))
    return table


def _print_coverage(
    sample: bool, provider: str | None, fmt: CoverageFormat, settings: Settings
) -> None:
    """``providers --coverage``: the current offers (the database, else the sample)."""
    from ..current import load_current
    from ..field_coverage import coverage_answer

    current = load_current(sample=sample, settings=settings)
    answer = coverage_answer(current, provider)
    if fmt is CoverageFormat.JSON:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
        return
    if current.note:
        err.print(f"[yellow]{current.note}[/]", highlight=False, soft_wrap=True)
    coverage = dict(current.field_coverage or {})
    out = wide_console()
    if provider is None:
        out.print(coverage_table(coverage))
        err.print(
            "share of each provider's current offers that carry the group's fields "
            "(filled / offers x fields); --provider NAME: field by field",
            highlight=False,
        )
    elif provider in coverage:
        out.print(field_coverage_table(coverage[provider]))
    else:
        held = ", ".join(coverage) or "none"
        raise typer.BadParameter(
            f"no current offers from {provider!r} (providers with offers: {held})",
            param_hint="--provider",
        )


def _over_network(provider: str) -> bool:
    """Whether the provider's adapter calls an API (a published price list read from a
    file does not)."""
    from gpuscout.adapters import registry

    cls = registry().get(provider)
    return cls is not None and bool(cls.base_url)


def _answered_over_network(summary: SnapshotSummary) -> bool:
    return any(p.status is RunStatus.OK and _over_network(p.provider) for p in summary.providers)


def no_network_line(summary: SnapshotSummary) -> str:
    """The one line of a snapshot no provider could be reached for: that there is no
    network, and what the answers show instead: the offers stored (price lists read from
    files, earlier snapshots' offers kept), else the offline sample."""
    tried = sum(
        p.status is not RunStatus.SKIPPED and _over_network(p.provider) for p in summary.providers
    )
    read = [p for p in summary.providers if p.status is RunStatus.OK and p.offer_count]
    kept = sum(p.offers_kept for p in summary.providers)
    if read or kept:
        parts = [f"{kept} offers kept from earlier snapshots"] if kept else []
        if read:
            names = ", ".join(p.provider for p in read)
            parts.append(f"{sum(p.offer_count for p in read)} offers read offline ({names})")
        shown = " and ".join(parts)
    else:
        days = sorted(e.dated for e in sample_entries())
        span = f"{days[0].isoformat()} to {days[-1].isoformat()}" if days else "no date"
        shown = f"the offline sample (recorded prices of {span}, not live)"
    return (
        f"error: no network: none of the {tried} provider APIs tried could be reached"
        f" ({UNREACHABLE}); answers show {shown}"
    )


def summary_table(runs: Sequence[ProviderRun]) -> Table:
    """Each run's outcome, where its offers came from, how many (``offer_count``: a run
    whose offers were let go once stored says how many it had) and its error."""
    table = Table(title="snapshot")
    for col in ("provider", "outcome", "source", "offers", "skipped", "seconds", "error"):
        table.add_column(col)
    style = {RunStatus.OK: "green", RunStatus.ERROR: "red", RunStatus.SKIPPED: "yellow"}
    for r in sorted(runs, key=lambda r: r.provider):
        table.add_row(
            r.provider,
            f"[{style[r.status]}]{r.status.value}[/]",
            # where its offers came from: its own API, the sample, or the catalog named
            f"via {r.source}" if r.source else r.origin.value,
            str(r.offer_count),
            str(len(r.skipped)),
            f"{r.duration_s:.2f}",
            r.error or "",
        )
    return table


async def fetch_all(
    adapters: list[Adapter], settings: Settings
) -> AsyncGenerator[ProviderRun, None]:
    """Fetch every adapter concurrently, with a live progress line per provider; each run
    is yielded as soon as it is final (:func:`service.snapshots.stream_adapters`)."""
    from ..snapshots import stream_adapters

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        tasks = {a.name: progress.add_task(f"{a.name}: fetching", total=1) for a in adapters}

        def done(run: ProviderRun) -> None:
            progress.update(
                tasks[run.provider],
                description=f"{run.provider}: {run.status.value} ({run.offer_count} offers)",
                completed=1,
            )

        async with contextlib.aclosing(stream_adapters(adapters, settings, on_done=done)) as runs:
            async for run in runs:
                yield run
                del run  # not held while the next is fetched


def _stored_state(settings: Settings) -> tuple[dict[str, Any], list[Any]] | None:
    """Each provider's latest stored outcome and the recent snapshot runs, if the
    database exists (nothing is created or migrated here); ``None`` if there is none."""
    import sqlalchemy as sa

    from gpuscout.db.engine import make_engine
    from gpuscout.db.models import ProviderStatus
    from gpuscout.db.runs import recent_runs

    url = sa.engine.make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and not (url.database and Path(url.database).exists()):
        return None
    engine = make_engine(url)
    try:
        tables = set(sa.inspect(engine).get_table_names())
        if "provider_status" not in tables:
            return None
        with engine.connect() as connection:
            status = {
                row.provider: row
                for row in connection.execute(sa.select(ProviderStatus.__table__)).all()
            }
            runs = (
                recent_runs(
                    connection, now=datetime.now(UTC), stale_after_s=settings.snapshot_lease_s
                )
                if "snapshot_run" in tables
                else []
            )
        return status, runs
    finally:
        engine.dispose()


def _print_runs(runs: list[Any]) -> None:
    """The latest snapshot run, and every aborted one among the recent runs."""
    for i, run in enumerate(runs):
        if i == 0 or run.status == "aborted":
            style = {"aborted": "red", "failed": "red", "running": "yellow"}.get(run.status)
            line = ("last " if i == 0 else "") + run.describe()
            err.print(f"[{style}]{line}[/]" if style else line, highlight=False, soft_wrap=True)


#: A term as the providers table writes it (the legend is printed beneath).
TERM_CODES = {
    "on_demand": "od",
    "interruptible": "spot",
    "commit_1d": "1d",
    "commit_1w": "1w",
    "commit_1mo": "1mo",
    "commit_3mo": "3mo",
    "commit_6mo": "6mo",
    "commit_1y": "1y",
    "commit_3y": "3y",
}


#: A lifecycle as the providers table writes it (the legend is printed beneath).
LIFECYCLE_CODES = {"active": "ok", "deprecated": "deprec", "retired": "retired"}


def providers_table(facts: list[ProviderFacts], status: Mapping[str, Any] | None = None) -> Table:
    """One row per provider: account needed, its lifecycle, its latest run (``status``: the
    stored outcomes; ``None``, no database: no column), what its current offers cover (offers,
    regions, GPU models, terms) and the day its format was checked against the provider's
    current documentation; narrow columns, so that it reads at 80 columns (the GPU models,
    settings and sources are listed beneath it)."""
    table = Table(
        title="providers", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0)
    )
    for col in ("name", "account", "state", *(("last run",) if status is not None else ())):
        table.add_column(col, no_wrap=True)
    for col in ("offers", "regions", "GPUs"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("terms")
    table.add_column("checked", no_wrap=True)
    for f in facts:
        last = status.get(f.name) if status is not None else None
        run = [last.last_status if last is not None else ""] if status is not None else []
        table.add_row(
            f.name,
            "yes" if f.account_needed else "no",
            LIFECYCLE_CODES.get(f.lifecycle, f.lifecycle),
            *run,
            str(f.offers),
            str(f.regions) if f.offers else "",
            str(len(f.gpu_models)) if f.offers else "",
            " ".join(TERM_CODES.get(t, t) for t in f.terms),
            f.format_checked or "-",
        )
    return table


def settings_table(creds: Mapping[str, str | None]) -> Table:
    """Every setting the adapters declare, its variable whole (never cut, whatever the width),
    whether the provider needs it and whether it is set (a secret's value never shown)."""
    from gpuscout.adapters.declarations import declared

    table = Table(title="settings", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("setting", no_wrap=True)
    table.add_column("provider", no_wrap=True)
    table.add_column("needed", no_wrap=True)
    table.add_column("now")
    for d in declared():
        for s in d.settings:
            value = creds.get(s.name)
            now = ("set" if s.secret else value) if value else (s.default or "not set")
            table.add_row(s.env_name, d.name, "yes" if s.required else "no", now)
    return table


def terms_table(settings: Settings) -> Table:
    """Every provider's terms as read (automated access, keeping a history, republishing;
    yes / no / unknown), the date read, and, under ``publication = public``, whether it is
    published and why not."""
    from gpuscout.adapters import provider_names
    from gpuscout.adapters.source_terms import terms_of

    from ..publication import withheld

    names = provider_names()
    out = withheld(settings, names)
    table = Table(
        title=f"terms (publication: {settings.publication})",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for col in ("name", "automated", "history", "republish", "read", "published"):
        table.add_column(col, no_wrap=True)
    for name in names:
        t = terms_of(name)
        table.add_row(
            name,
            t.automated_access.value,
            t.keeping_history.value,
            t.republishing.value,
            t.read_on or "-",
            "no" if name in out else "yes",
        )
    return table


def _print_terms(settings: Settings) -> None:
    """The terms table, then each provider's URL, quoted clauses and, when withheld, why."""
    from gpuscout.adapters import provider_names
    from gpuscout.adapters.source_terms import terms_of

    from ..publication import withheld

    out = wide_console()
    out.print(terms_table(settings))
    held_back = withheld(settings, provider_names())
    for name in provider_names():
        t = terms_of(name)
        lines = [f"  terms: {t.terms_url}"] if t.terms_url else []
        for what, clause in (
            ("automated access", t.automated_access_clause),
            ("keeping history", t.keeping_history_clause),
            ("republishing", t.republishing_clause),
        ):
            if clause:
                lines.append(f'  {what}: "{clause}"')
        if t.note:
            lines.append(f"  {t.note}")
        if name in held_back:
            lines.append(f"  not published: {held_back[name]}")
        if lines:
            out.print(f"[bold]{name}[/] ({t.source})", highlight=False, soft_wrap=True)
            for line in lines:
                out.print(line, highlight=False, soft_wrap=True)
    err.print(
        "unknown: not read yet, never taken as allowed; with GPUSCOUT_PUBLICATION=public only"
        " sources whose terms say yes to republishing are published"
        " (adapters/data/source_terms.toml)",
        highlight=False,
    )


def _print_providers(settings: Settings, status: Mapping[str, Any] | None) -> None:
    """The providers table, where each one's prices come from, and every provider setting;
    what the offers cover is counted over the current offers (stored, else the sample)."""
    from ..current import load_current
    from ..provider_facts import provider_facts

    current = load_current(settings=settings)
    facts = provider_facts(current.frame)
    out = wide_console()
    out.print(providers_table(facts, status))
    counted = "the stored offers" if current.source != "sample" else "the offline sample"
    err.print(
        f"offers, regions, GPU models and terms: {counted}; state: ok active, deprec"
        " deprecated (still fetched), retired (not fetched, never ranked); terms: od on"
        " demand, spot interruptible, 1mo/1y/... a commitment; checked: the day the format"
        " was checked against the provider's current documentation",
        highlight=False,
    )
    out.print()
    for f in facts:
        last = (status or {}).get(f.name)
        out.print(f"[bold]{f.name}[/]: {f.source}", highlight=False)
        account = "needs an account" if f.account_needed else "no account needed"
        out.print(f"  {account}; settings: {', '.join(f.settings) or 'none'}", highlight=False)
        if f.lifecycle_note:
            out.print(f"  [yellow]{f.lifecycle_note}[/]", highlight=False)
        if f.format_doc:
            out.print(f"  format {f.format_checked}: {f.format_doc}", highlight=False)
        if f.gpu_models:
            out.print(f"  GPUs: {', '.join(f.gpu_models)}", highlight=False)
        if last is not None and last.last_error:
            out.print(f"  [red]last error: {last.last_error}[/]", highlight=False)
    out.print()
    out.print(settings_table(settings.provider_credentials()))
    err.print(
        "each setting is an environment variable (or a .env line); a provider base URL is"
        " GPUSCOUT_<NAME>_BASE_URL (adapters/README.md lists them all)",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    @app.command("providers")
    def providers(
        coverage: Annotated[
            bool,
            typer.Option(
                "--coverage",
                help="the share of each provider's current offers carrying each checklist"
                " group's fields (where 'unknown' comes from)",
            ),
        ] = False,
        provider: Annotated[
            str | None,
            typer.Option("--provider", "-p", help="with --coverage: this one, field by field"),
        ] = None,
        sample: Annotated[
            bool, typer.Option("--sample", help="with --coverage: the offline sample's offers")
        ] = False,
        fmt: Annotated[
            CoverageFormat, typer.Option("--format", help="with --coverage: table or json")
        ] = CoverageFormat.TABLE,
        terms: Annotated[
            bool,
            typer.Option(
                "--terms",
                help="what each source's terms allow (automated access, history,"
                " republishing) and what publication = public withholds",
            ),
        ] = False,
    ) -> None:
        """List the registered providers, whether their credentials are set and, once
        snapshots are stored, each one's latest outcome and the latest snapshot run;
        with --coverage, which fields their current offers carry; with --terms, what
        each source's terms allow."""
        import sqlalchemy.exc

        settings = get_settings()
        if terms:
            _print_terms(settings)
            return
        if coverage:
            _print_coverage(sample, provider, fmt, settings)
            return
        if provider is not None or sample or fmt is not CoverageFormat.TABLE:
            raise typer.BadParameter(
                "--provider, --sample and --format go with --coverage", param_hint="--coverage"
            )
        try:
            stored = _stored_state(settings)
        except sqlalchemy.exc.SQLAlchemyError as exc:
            err.print(f"[yellow]database not read: {type(exc).__name__}[/]", highlight=False)
            stored = None
        status, runs = stored or (None, [])
        _print_providers(settings, status)
        _print_runs(runs)

    @app.command("parse")
    def parse(
        provider: Annotated[str, typer.Argument(help="provider name, see `gpuscout providers`")],
        files: Annotated[
            list[Path],
            typer.Argument(exists=True, dir_okay=False, readable=True, help="raw responses"),
        ],
        fmt: Annotated[ParseFormat, typer.Option("--format", help="output format")] = (
            ParseFormat.TABLE
        ),
    ) -> None:
        """Run a provider's parse over recorded raw responses and print the offers."""
        try:
            adapter = get_adapter(provider)()
        except KeyError as exc:
            raise typer.BadParameter(str(exc.args[0]), param_hint="PROVIDER") from None
        try:
            payloads = [adapter.decode(f.read_bytes(), f.name) for f in files]
            result = adapter.parse(payloads, fetched_at=datetime.now(UTC))
        except AdapterError as exc:
            err.print(f"[red]error:[/] {exc}")
            raise typer.Exit(1) from None
        except RecursionError:  # a format the depth check does not read (not JSON)
            err.print(f"[red]error:[/] {provider}: the input nests too deeply to parse")
            raise typer.Exit(1) from None
        from ..fx import fx_table

        fx = fx_table(get_settings())  # USD figures as the snapshot would store them
        offers = [offer.with_fx(fx) for offer in result.offers]
        if fmt is ParseFormat.JSONL:
            for offer in offers:
                sys.stdout.write(json.dumps(offer.to_record(), ensure_ascii=False) + "\n")
        else:
            wide_console().print(offers_table(offers, title=f"{provider}: {len(offers)}"))
        for reason, count in sorted(result.skip_reasons().items()):
            err.print(f"skipped {count} record(s): {reason}")

    @app.command("snapshot")
    def snapshot(
        provider: Annotated[
            list[str] | None, typer.Option("--provider", "-p", help="only these providers")
        ] = None,
        sample: Annotated[
            bool, typer.Option("--sample", help="replay the bundled recorded responses")
        ] = False,
    ) -> None:
        """Fetch all enabled providers concurrently, store the snapshot and report each
        provider's outcome (one snapshot at a time: another runner's lock makes this exit 1)."""
        # the database only for storing: the other commands do not import it
        from ..snapshots import (
            SnapshotLocked,
            UnknownProvider,
            build_adapters,
            fetch_providers,
            noting,
            stored_run,
            take_snapshot,
        )
        from .db import stored_table

        settings = get_settings()
        out = wide_console()
        if sample:
            err.print(f"[yellow]{sample_note()}[/]")

            def fetch() -> Iterable[ProviderRun]:
                return replay_sample(provider or None)
        else:
            try:  # an unknown name is refused before anything runs
                build_adapters(settings, provider or None)
            except UnknownProvider as exc:
                raise typer.BadParameter(str(exc), param_hint="--provider") from None

            def fetch() -> Iterable[ProviderRun]:
                return fetch_providers(settings, provider or None, fetch=fetch_all)

        # each run as it was fetched (its offers let go once stored: their number kept), for
        # the summary printed once storing ends, or fails
        seen: list[ProviderRun] = []

        def fetch_and_note() -> Iterable[ProviderRun]:
            return noting(fetch(), lambda run: seen.append(stored_run(run)))

        try:
            stored = take_snapshot(settings, fetch=fetch_and_note)
        except SnapshotLocked as exc:
            err.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        finally:
            if seen:  # seen even if storing failed
                out.print(summary_table(seen))
        for aborted in stored.aborted:
            err.print(f"[red]{aborted.describe()}[/]", highlight=False, soft_wrap=True)
        out.print(stored_table(stored))
        runs = stored.runs
        unknown = unknown_gpu_names()
        if unknown:
            names = ", ".join(f"{name!r} x{n}" for name, n in unknown.most_common(8))
            err.print(
                f"{len(unknown)} GPU name(s) not in the catalog (offers stored, not ranked): "
                f"{names}",
                highlight=False,
            )
        for change in stored.summary.providers:
            if change.guarded:
                err.print(
                    f"[yellow]{change.provider}: {change.error}[/]", highlight=False, soft_wrap=True
                )
        # a run the plausibility guard stored as failed counts as failed
        failed = [p for p in stored.summary.providers if p.status is RunStatus.ERROR]
        if not failed:
            return
        cut_off = sorted(p.provider for p in failed if unreachable(p.error))
        if len(cut_off) == len(failed) and not _answered_over_network(stored.summary):
            err.print(no_network_line(stored.summary), highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        err.print(f"[red]{len(failed)} of {len(runs)} provider(s) failed[/]")
        if cut_off:
            err.print(
                f"not reached ({UNREACHABLE}): {', '.join(cut_off)}; what the others"
                " answered is stored, earlier offers of these are kept",
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(1)
