"""``gpuscout publish``, ``gpuscout follow`` and ``gpuscout keygen``: the published catalog.

``publish DIR`` writes the current snapshot as signed static files (:mod:`service.catalog.publish`);
``follow`` polls the catalog ``catalog_url`` names once and stores it as a snapshot
(:mod:`service.catalog.follow`); ``keygen`` makes the Ed25519 key pair a publisher signs
with and its followers check against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..settings import get_settings
from .errors import EXIT_ENVIRONMENT

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("publish")
    def publish(
        directory: Annotated[
            Path | None,
            typer.Argument(help="catalog directory (default GPUSCOUT_PUBLISH_DIR)"),
        ] = None,
        key: Annotated[
            Path | None,
            typer.Option("--key", help="Ed25519 private key (default GPUSCOUT_PUBLISH_KEY_FILE)"),
        ] = None,
    ) -> None:
        """Write the current snapshot as a signed catalog of Parquet files into DIR."""
        from ..catalog.publish import NothingToPublish, publish_catalog

        settings = get_settings()
        try:
            result = publish_catalog(settings, directory, key_file=key)
        except NothingToPublish as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_ENVIRONMENT) from None
        manifest = result.manifest
        typer.echo(
            f"published {manifest.version}: {result.offer_count} offers of"
            f" {len(manifest.providers)} providers, {result.total_bytes} bytes,"
            f" in {result.directory}"
        )
        for w in manifest.withheld:
            typer.echo(f"withheld {w.provider}: {w.reason}")
        if result.removed:
            typer.echo(f"removed older versions: {', '.join(result.removed)}")

    @app.command("follow")
    def follow() -> None:
        """Poll the followed catalog (GPUSCOUT_CATALOG_URL) once and store what it holds."""
        from ..catalog.follow import follow_catalog
        from ..catalog.manifest import CatalogError

        settings = get_settings()
        try:
            result = follow_catalog(settings)
        except CatalogError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_ENVIRONMENT) from None
        if result.unchanged:
            typer.echo("catalog unchanged: nothing stored")
            return
        version = result.manifest.version if result.manifest else "none"
        typer.echo(f"followed {version}: {result.offer_count} offers stored")
        if result.error:
            typer.echo(f"error: {result.error}", err=True)
            raise typer.Exit(EXIT_ENVIRONMENT)

    @app.command("keygen")
    def keygen(
        key: Annotated[
            Path | None,
            typer.Argument(help="private key file to write (default GPUSCOUT_PUBLISH_KEY_FILE)"),
        ] = None,
    ) -> None:
        """Make an Ed25519 key pair: KEY (private, mode 0600) and KEY.pub for followers."""
        from ..catalog.publish import key_path
        from ..catalog.signing import generate_key

        settings = get_settings()
        private, public = generate_key(key or key_path(settings))
        typer.echo(f"private key: {private}\npublic key (give it to followers): {public}")
