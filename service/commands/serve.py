"""``gpuscout serve``: the REST API (and, by default, the scheduler in a child process).

The scheduler's snapshots are CPU-bound work (parsing, framing); run in a process of its
own (``gpuscout scheduler``, as ``deploy/`` runs it), they never share a process, nor its
GIL, with the API's reads and rankings.

``--get /v1/offers?...`` runs one request through the app in-process and prints the answer,
without binding a port (like datasette's ``serve --get``): for docs, tests and scripts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..settings import MIN_SECRET_CHARS, Settings, get_settings
from .errors import EXIT_INPUT, one_line

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["get_once", "register", "secrets_check", "worker_polars_threads"]

err = logging.getLogger("gpuscout.serve")


def migrate(settings: Settings) -> str | None:
    """Apply the migrations to the configured database (the embedded SQLite by default);
    what was wrong, in one line, when the database cannot be reached (the start goes on:
    ``/readyz`` and the log say so). A database already at head is one query, no Alembic
    (a restart)."""
    from sqlalchemy.exc import SQLAlchemyError

    from gpuscout.db.migrate import upgrade_if_behind

    try:
        upgrade_if_behind(settings.database_url)
    except SQLAlchemyError as exc:
        said = one_line(exc)
        return said[0] if said is not None else str(exc)
    return None


async def _get(app: Any, path: str) -> tuple[int, dict[str, str], bytes]:
    import httpx

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gpuscout") as client:
        response = await client.get(path)
        return response.status_code, dict(response.headers), response.content


def get_once(path: str, settings: Settings | None = None, app: Any = None) -> tuple[int, bytes]:
    """Status and body of ``GET path`` through a fresh app; nothing listens on a port."""
    from ..api import create_app

    if not path.startswith("/"):
        path = "/" + path
    app = app or create_app(settings or get_settings())
    status, _headers, body = asyncio.run(_get(app, path))
    return status, body


def secrets_check(settings: Settings, host: str) -> tuple[str, bool] | None:
    """What ``serve`` says about unset service secrets: ``(message, refuse)``, or ``None``.

    On a loopback address an unset secret is a note (the admin endpoints are off; mail links
    are signed with a key kept in the data dir). Beyond loopback ``serve`` refuses to start,
    naming what to set: whoever reaches the port must meet real secrets.
    """
    names = settings.unset_secrets()
    if not names:
        return None
    env = ", ".join(f"GPUSCOUT_{n.upper()}" for n in names)
    if _is_loopback(host):
        return f"unset: {env} (admin endpoints off without a token; fine on {host})", False
    return (
        f"refusing to serve on {host} without {env}: set each to a random value of at least"
        f" {MIN_SECRET_CHARS} characters (e.g. `openssl rand -hex 32`), or bind 127.0.0.1",
        True,
    )


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: The app factory each of several workers imports and calls (uvicorn's ``factory``).
WORKER_APP = "gpuscout.service.api.app:serving_app"


def _app(settings: Settings) -> FastAPI:
    from ..api.app import create_app

    return create_app(settings)


def worker_polars_threads(settings: Settings, workers: int) -> int | None:
    """The polars threads each of ``workers`` API worker processes ranks with
    (``api_worker_polars_threads``, else the machine's cores over the workers, at least
    one), or ``None`` where this does not choose: one worker (polars' default, a thread
    per core) or ``POLARS_MAX_THREADS`` set in the environment (the operator's)."""
    if workers < 2 or "POLARS_MAX_THREADS" in os.environ:
        return None
    return settings.api_worker_polars_threads or max(1, (os.cpu_count() or 1) // workers)


def _pin_worker_threads(settings: Settings, workers: int) -> None:
    """Start the workers with :func:`worker_polars_threads` polars threads each (polars
    sizes its thread pool from ``POLARS_MAX_THREADS`` when it is imported, and the workers
    inherit this process's environment; the scheduler, started before, keeps a thread per
    core for its snapshots)."""
    threads = worker_polars_threads(settings, workers)
    if threads is not None:
        os.environ["POLARS_MAX_THREADS"] = str(threads)


#: How long a stopping ``serve`` waits for its scheduler to finish before killing it.
SCHEDULER_STOP_S = 10.0


def start_scheduler() -> subprocess.Popen[bytes]:
    """``gpuscout scheduler`` in a child process (same interpreter, same environment)."""
    return subprocess.Popen([sys.executable, "-m", "gpuscout.service.cli", "scheduler"])


def stop_scheduler(child: subprocess.Popen[bytes], wait_s: float = SCHEDULER_STOP_S) -> None:
    """Stop the scheduler as Ctrl-C does (``SIGINT``: it stops between jobs, a snapshot's
    transaction rolled back), killing it after ``wait_s``."""
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(wait_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: Annotated[
            str | None, typer.Option(help="address to bind (GPUSCOUT_API_HOST)")
        ] = None,
        port: Annotated[
            int | None, typer.Option(min=1, max=65535, help="port to bind (GPUSCOUT_API_PORT)")
        ] = None,
        no_scheduler: Annotated[
            bool, typer.Option("--no-scheduler", help="serve only; snapshots run elsewhere")
        ] = False,
        get: Annotated[
            str | None,
            typer.Option("--get", metavar="PATH", help="run one GET through the app, print it"),
        ] = None,
        workers: Annotated[
            int | None,
            typer.Option(min=1, max=64, help="API worker processes (GPUSCOUT_API_WORKERS)"),
        ] = None,
    ) -> None:
        """Serve the REST API; snapshots are scheduled in a child process unless told not."""
        from ..fx import fx_table

        settings = get_settings()
        fx_table(settings)  # a broken FX file is one line now, not a failing load later
        problem = migrate(settings)
        if problem is not None:  # an unreachable database: /readyz and the log say so
            typer.secho(f"migrations not applied: {problem}", err=True, fg="yellow")
        if get is not None:
            status, body = get_once(get, settings)
            try:
                text = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
            except ValueError:
                text = body.decode("utf-8", "replace")
            sys.stdout.write(text + "\n")
            if status >= 400:
                raise typer.Exit(1)
            return

        import uvicorn

        from ..log_output import service_log

        # the scheduler's line per snapshot, the API's own warnings: while serving
        with service_log():
            bind_host = host or settings.api_host
            bind_port = port if port is not None else settings.api_port
            from .bind_check import bind_problem

            problem = bind_problem(
                bind_host,
                bind_port,
                host_from="--host" if host else "GPUSCOUT_API_HOST",
                port_from="--port" if port is not None else "GPUSCOUT_API_PORT",
            )
            if problem is not None:  # before the app is built and the URL announced
                typer.echo(f"error: {problem}", err=True)
                raise typer.Exit(EXIT_INPUT)
            unset = secrets_check(settings, bind_host)
            if unset is not None:
                message, refuse = unset
                if refuse:
                    typer.echo(f"error: {message}", err=True)
                    raise typer.Exit(EXIT_INPUT)
                typer.secho(message, err=True, fg="yellow")
            processes = workers if workers is not None else settings.api_workers
            # Several workers each build their own app from the settings (uvicorn imports the
            # factory in every process): this one only starts and watches them; one worker
            # serves the app built here.
            api: str | FastAPI = WORKER_APP if processes > 1 else _app(settings)
            scheduler = None if no_scheduler else start_scheduler()
            _pin_worker_threads(settings, processes)
            shown = "127.0.0.1" if bind_host in ("0.0.0.0", "") else bind_host
            typer.echo(f"gpuscout API on http://{shown}:{bind_port}/v1/offers (docs: /docs)")
            try:
                # One setting decides whom X-Forwarded-For is believed from: the mail limits read
                # it themselves behind `trusted_proxies`, so uvicorn must not rewrite the client.
                uvicorn.run(
                    api,
                    host=bind_host,
                    port=bind_port,
                    log_level="info",
                    access_log=settings.api_access_log,
                    proxy_headers=False,
                    limit_concurrency=settings.api_max_connections,
                    timeout_keep_alive=settings.api_keep_alive_s,
                    workers=processes if processes > 1 else None,
                    factory=processes > 1,
                )
            finally:
                if scheduler is not None:
                    stop_scheduler(scheduler)
