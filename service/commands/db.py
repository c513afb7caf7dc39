"""``gpuscout db upgrade``, ``gpuscout history`` (and ``history export``) and
``gpuscout scheduler``."""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gpuscout.adapters.regions import RegionClass
from gpuscout.adapters.schema import RentalTerm

from ..settings import get_settings
from .deprecated import deprecated_option, refuse, resolve_deprecated

if TYPE_CHECKING:
    from ..snapshots import SnapshotResult

__all__ = ["register", "stored_table"]

err = Console(stderr=True)

#: Most days ``history --days`` reaches back (ten years; retention keeps two by default).
MAX_HISTORY_DAYS = 3660


def x_limits(days: list[date]) -> tuple[date, date]:
    """The chart's date axis: the days drawn, and a day each side of a single one (left to
    itself, matplotlib widens one date to years either side)."""
    first, last = min(days), max(days)
    if first == last:
        return first - timedelta(days=1), last + timedelta(days=1)
    return first, last


def _plot(frame: object, path: Path, title: str) -> None:
    """Draw the daily (or hourly) index (median with the p10-p90 band, and the minimum) to
    ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    assert isinstance(frame, pl.DataFrame)
    days = frame[frame.columns[0]].to_list()  # its days or hours

    def values(column: str) -> Any:
        return frame[column].cast(pl.Float64).to_numpy()  # nulls (no offers) become NaN

    fig, ax = plt.subplots(figsize=(9, 4.5))
    try:
        ax.fill_between(
            days,
            values("p10_usd_per_gpu_hour"),
            values("p90_usd_per_gpu_hour"),
            alpha=0.25,
            label="p10-p90",
        )
        ax.plot(days, values("median_usd_per_gpu_hour"), marker="o", label="median")
        ax.plot(days, values("min_usd_per_gpu_hour"), linestyle="--", label="min")
        ax.set_xlim(*x_limits(days))  # type: ignore[arg-type]
        ax.set_title(title)
        ax.set_ylabel("USD per GPU-hour")
        ax.legend()
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def register(app: typer.Typer) -> None:
    db_app = typer.Typer(help="The database: migrations.", no_args_is_help=True)
    app.add_typer(db_app, name="db")

    @db_app.command("upgrade")
    def upgrade_command(
        url: Annotated[
            str | None, typer.Option("--url", help="database URL (default: from settings)")
        ] = None,
    ) -> None:
        """Apply the database migrations (creates the schema on an empty database)."""
        from gpuscout.db.migrate import current_revision, upgrade

        target = url or get_settings().database_url
        upgrade(target)
        err.print(f"database at revision {current_revision(target)}")

    history_app = typer.Typer(
        help="Daily price index of a GPU from the stored price history; `history export`"
        " writes the history as daily Parquet files.",
        invoke_without_command=True,
    )
    app.add_typer(history_app, name="history")

    @history_app.callback()
    def history(
        ctx: typer.Context,
        gpus: Annotated[
            str | None,
            typer.Option(
                "--gpus",
                help="one GPU model, family or vendor, or a name as providers write it"
                " (H100, 'H100 SXM', 4090), as offers reads it (required)",
            ),
        ] = None,
        old_gpu: Annotated[str | None, deprecated_option("--gpu", "--gpus")] = None,
        days: Annotated[
            int | None,
            typer.Option(
                "--days",
                min=1,
                max=MAX_HISTORY_DAYS,
                help="days back from today (30; with --hourly, 1)",
            ),
        ] = None,
        term: Annotated[RentalTerm, typer.Option("--term", help="rental term")] = (
            RentalTerm.ON_DEMAND
        ),
        plot: Annotated[
            Path | None, typer.Option("--plot", dir_okay=False, help="also draw a PNG chart")
        ] = None,
        region_class: Annotated[
            RegionClass | None,
            typer.Option(
                "--region-class",
                help="only the offers of this region class (from their country);"
                " a GPU model, family or vendor only",
            ),
        ] = None,
        hourly: Annotated[
            bool,
            typer.Option(
                "--hourly",
                help="per UTC hour over the last --days (kept for the last days only:"
                " GPUSCOUT_ROLLUP_HOURLY_DAYS)",
            ),
        ] = False,
    ) -> None:
        """Daily price index of a GPU (USD per GPU-hour) from the stored price history.

        A day counts the prices the database held on it: prices of the offline sample
        (`snapshot --sample`) from the day they were stored, not from their capture dates;
        the note on stderr and the chart's title say so. `--hourly` reads it per UTC hour;
        the "stock" column is the share of offers stated available."""
        if ctx.invoked_subcommand is not None:
            return
        gpu = resolve_deprecated(gpus, old_gpu, "--gpu", "--gpus")
        if gpu is None:
            refuse("--gpus: required (a GPU model or family, e.g. H100)")
        from gpuscout.pricing.names import refused_gpus

        unknown = refused_gpus([gpu])
        if unknown:
            refuse(f"--gpus: {unknown}")  # as `offers` refuses it
        if plot is not None and not plot.parent.is_dir():  # told before the query, not after
            refuse(f"--plot: {plot.parent} is not a directory")
        from gpuscout.db.engine import make_engine
        from gpuscout.db.history import daily_index, hourly_index, hourly_window, index_label
        from gpuscout.db.migrate import upgrade

        settings = get_settings()
        now = datetime.now(UTC)
        days = days or (1 if hourly else 30)
        end = now.date()
        start = end - timedelta(days=days - 1)
        first = last = now
        if hourly:
            try:
                first, last = hourly_window(now, days, settings.rollup_hourly_days)
            except ValueError as exc:
                refuse(f"--days: {exc}")
            start, end = first.date(), last.date()
        upgrade(settings.database_url)
        engine = make_engine(settings.database_url)
        try:
            if hourly:
                frame = hourly_index(
                    engine, gpu=gpu, term=term, start=first, end=last, region_class=region_class
                )
            else:
                frame = daily_index(
                    engine,
                    gpu=gpu,
                    term=term,
                    start=start,
                    end=end,
                    region_class=region_class,
                    availability=True,
                )
            label = index_label(engine, frame, gpu=gpu, term=term, start=start, end=end)
        except ValueError as exc:  # a region class or hours of no GPU series
            refuse(str(exc))
        finally:
            engine.dispose()
        if label.note:
            err.print(f"[yellow]note:[/] {label.note}", highlight=False)
        if frame["offers"].sum() == 0:  # a table (or chart) of empty days says nothing more
            err.print(
                f"[yellow]no stored prices for {gpu!r} ({term.value}) from {start} to {end}; "
                "take snapshots with `gpuscout snapshot` or `gpuscout scheduler`"
                f"{'; no chart written' if plot is not None else ''}[/]"
            )
            return

        def money(value: float | None) -> str:
            return "" if value is None else f"{value:.4f}"

        def share(value: float | None) -> str:
            return "" if value is None else f"{value:.0%}"

        def when(value: Any) -> str:
            return value.strftime("%Y-%m-%d %H:00") if hourly else value.isoformat()

        def cell(value: Any) -> str:  # the title names the year: an hour's row fits 80 columns
            return value.strftime("%m-%d %H:00") if hourly else value.isoformat()

        period = "hour" if hourly else "day"
        shown = frame
        priced = [at for at, n in zip(frame[period], frame["offers"], strict=True) if n]
        if priced and priced[0] > frame[period][0]:  # not a column of empty periods first
            shown = frame.filter(frame[period] >= priced[0])
            err.print(f"no stored prices before {when(priced[0])}: the table starts there")
        # the title names the periods drawn, not the window asked for
        drawn = when(shown[period][0])
        if shown[period][0] != frame[period][-1]:
            drawn += f" to {when(frame[period][-1])}"
        title = f"{gpu} {term.value}: USD per GPU-hour, {drawn}"
        if region_class is not None:
            title += f", {region_class.value}"
        if label.caption:
            title += f" ({label.caption})"
        table = Table(title=title)
        table.add_column(period, no_wrap=True)
        for col in ("median", "p10", "p90", "min", "offers", "providers", "stock"):
            table.add_column(col, justify="right")
        for row in shown.iter_rows(named=True):
            table.add_row(
                cell(row[period]),
                money(row["median_usd_per_gpu_hour"]),
                money(row["p10_usd_per_gpu_hour"]),
                money(row["p90_usd_per_gpu_hour"]),
                money(row["min_usd_per_gpu_hour"]),
                str(row["offers"]),
                str(row["providers"]),
                share(row["availability_share"]),
            )
        Console().print(table)
        if plot is not None:
            _plot(shown, plot, title)
            err.print(f"chart written to {plot}")

    @history_app.command("export")
    def export(
        directory: Annotated[
            Path, typer.Argument(file_okay=False, help="where the files and manifest go")
        ],
    ) -> None:
        """Write the price history as daily Parquet files with a manifest.

        One file per finished UTC day (prices/dt=YYYY-MM-DD/prices.parquet), one row per
        offer, and manifest.json with each file's sha256; days already written are kept.
        Read them with polars or DuckDB, no server needed."""
        from gpuscout.db.engine import make_engine
        from gpuscout.db.history_export import export_history
        from gpuscout.db.migrate import upgrade

        settings = get_settings()
        upgrade(settings.database_url)
        engine = make_engine(settings.database_url)
        yesterday = datetime.now(UTC).date() - timedelta(days=1)
        try:
            result = export_history(engine, directory, until=yesterday)
        finally:
            engine.dispose()
        err.print(
            f"{result.days_written} days written ({result.rows_written} rows),"
            f" {result.days_kept} kept; manifest: {result.manifest}"
        )

    @app.command("scheduler")
    def scheduler() -> None:
        """Run the snapshot scheduler alone, in the foreground (Ctrl-C stops it)."""
        from apscheduler.schedulers.blocking import BlockingScheduler

        from gpuscout.db.migrate import upgrade

        from ..fx import fx_table
        from ..log_output import service_log
        from ..scheduler import build_scheduler

        settings = get_settings()
        fx_table(settings)  # a broken FX file is one line now, not a failing snapshot later
        upgrade(settings.database_url)
        runner = build_scheduler(settings, scheduler=BlockingScheduler(timezone=UTC))
        err.print(
            f"snapshots every {settings.snapshot_interval_minutes:g} min "
            f"into {settings.database_url.split('@')[-1]}; Ctrl-C to stop"
        )
        with contextlib.suppress(KeyboardInterrupt, SystemExit), service_log():
            runner.start()  # one line per snapshot run on standard error


def stored_table(stored: SnapshotResult) -> Table:
    """What a stored snapshot changed, per provider (printed by ``gpuscout snapshot``); a
    run the plausibility guard stored as failed is ``suspect``, with the guard's verdict."""
    from gpuscout.db.guard import SUSPECT_PREFIX

    summary = stored.summary
    sample = summary.origin != "live"
    table = Table(
        title=f"stored snapshot {summary.snapshot_id}: {summary.offer_count} offers, "
        f"price history +{summary.history_added} / closed {summary.history_closed}",
        caption=(
            ("offers of the offline sample: recorded prices, not live; " if sample else "")
            + f"pruned {stored.pruned.snapshots_deleted} old snapshot(s), "
            f"{stored.pruned.history_deleted} old price row(s)"
        ),
    )
    guarded = any(p.guarded for p in summary.providers)
    columns = ("provider", "outcome", "current", "new", "gone", "repriced", "history +/-")
    for col in (*columns, "guard") if guarded else columns:
        table.add_column(col, justify="right" if col in columns[2:] else "left")
    for p in sorted(summary.providers, key=lambda p: p.provider):
        failed = p.status.value != "ok"
        outcome = "suspect" if p.guarded else p.status.value
        row = [
            p.provider,
            outcome + (f" ({p.offers_kept} earlier offers kept)" if p.offers_kept else ""),
            str(p.offers_kept) if failed else str(p.offer_count),
            str(p.offers_added),
            str(p.offers_removed),
            str(p.prices_changed),
            f"+{p.history_added} / -{p.history_closed}",
        ]
        if guarded:
            row.append((p.error or "").removeprefix(SUSPECT_PREFIX) if p.guarded else "")
        table.add_row(*row)
    return table
