"""Foreign-exchange rates: the table prices in CNY, EUR, JPY... are converted to USD with.

gpuscout ships the ECB euro reference rates of one day (``adapters/fx_rates.toml``).
``gpuscout fx update`` downloads the ECB's latest daily rates and writes them, in the same
TOML form, to ``fx_rates_file`` (or ``data_dir/fx_rates.toml``). Nothing converts with a
process-wide table: whoever loads or stores offers reads the table the settings select
(:func:`fx_table`) and passes it on, so the API picks up a new table when it reloads its
offers and the scheduler with its next snapshot, without a restart.

The ECB daily file (``eurofxref-daily.xml``) is a ``gesmes:Envelope`` holding
``<Cube><Cube time="YYYY-MM-DD"><Cube currency="USD" rate="1.1435"/>...</Cube></Cube>``,
rates in units per 1 EUR (format as in a live capture of 2026-07-09, reproduced in the test
fixture ``tests/fixtures/fx/eurofxref-daily.2026-07-09.verbatim.xml``).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscout.adapters.schema import FxTable, default_fx, load_fx

from .settings import Settings

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ECB_DAILY_URL",
    "FxError",
    "ecb_toml",
    "fx_file",
    "fx_table",
    "fx_target",
    "run_fx_job",
    "update_fx_file",
]

log = logging.getLogger("gpuscout.fx")

ECB_DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
_EUROFXREF = "{http://www.ecb.int/vocabulary/2002-08-01/eurofxref}"
#: File name of the table ``gpuscout fx update`` writes in ``data_dir`` by default.
DATA_DIR_FILE = "fx_rates.toml"


class FxError(ValueError):
    """An FX file or download that cannot be used; the message says which and why."""


def fx_file(settings: Settings) -> Path | None:
    """The FX file the settings select: ``fx_rates_file``, else ``data_dir/fx_rates.toml``
    when it exists, else ``None`` (the shipped table)."""
    if settings.fx_rates_file is not None:
        return settings.fx_rates_file
    default = settings.data_dir / DATA_DIR_FILE
    return default if default.is_file() else None


def fx_target(settings: Settings) -> Path:
    """Where ``gpuscout fx update`` and the scheduler write: ``fx_rates_file``, else
    ``data_dir/fx_rates.toml`` (which :func:`fx_file` then picks up)."""
    return settings.fx_rates_file or settings.data_dir / DATA_DIR_FILE


def read_fx_file(path: Path) -> FxTable:
    try:
        return load_fx(path.read_text("utf-8"))
    except OSError as exc:
        raise FxError(f"FX rates file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError too
        raise FxError(f"FX rates file {path}: {exc}") from None


def fx_table(settings: Settings) -> FxTable:
    """The table the settings select (read from its file now), else the shipped one.

    A named file that is missing or broken is an :class:`FxError`.
    """
    path = fx_file(settings)
    return read_fx_file(path) if path is not None else default_fx()


def ecb_toml(xml_text: str, *, source_url: str = ECB_DAILY_URL) -> str:
    """The ECB daily XML as an FX TOML file (``as_of``, ``source``, rates per EUR)."""
    import xml.etree.ElementTree as ET  # only to download: reading the table is TOML

    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise FxError(f"ECB rates are not XML: {exc}") from None
    day = root.find(f"{_EUROFXREF}Cube/{_EUROFXREF}Cube[@time]")
    if day is None:
        raise FxError("ECB rates: no <Cube time=...> in the answer")
    as_of = day.get("time", "")
    lines = [
        f"# Euro foreign exchange reference rates of the European Central Bank, {as_of}",
        f"# (units per 1 EUR), downloaded from {source_url} by 'gpuscout fx update'.",
        f'as_of = "{as_of}"',
        f'source = "ECB euro foreign exchange reference rates, {as_of}"',
        'base = "EUR"',
        "",
        "[per_base]",
        "EUR = 1",
    ]
    for cube in day.findall(f"{_EUROFXREF}Cube"):
        currency, rate = cube.get("currency", ""), cube.get("rate", "")
        if not (len(currency) == 3 and currency.isalpha() and currency.isupper()):
            raise FxError(f"ECB rates: bad currency {currency!r}")
        try:
            value = Decimal(rate)
        except InvalidOperation:
            raise FxError(f"ECB rates: bad rate {rate!r} for {currency}") from None
        lines.append(f"{currency} = {value}")
    text = "\n".join(lines) + "\n"
    try:
        load_fx(text)  # the same checks as any FX file: USD present, rates > 0
    except ValueError as exc:
        raise FxError(f"ECB rates of {as_of}: {exc}") from None
    return text


def update_fx_file(path: Path, client: httpx.Client, *, url: str = ECB_DAILY_URL) -> FxTable:
    """Download the ECB's latest rates and replace ``path`` with them, atomically: on any
    failure the previous file stays as it was."""
    import httpx  # only to download: reading the table needs no HTTP client

    try:
        response = client.get(url)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise FxError(f"ECB rates not downloaded from {url}: {exc}") from None
    text = ecb_toml(response.text, source_url=url)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fx_rates.", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return load_fx(text)


def run_fx_job(
    settings: Settings, *, client: Callable[[], httpx.Client] | None = None
) -> FxTable | None:
    """The scheduler's FX job: download the ECB's rates into the file the settings select.

    Every later load or snapshot converts with them (:func:`fx_table`). A failed download is
    logged and changes nothing: prices keep converting with the table in use, whose date
    ``gpuscout fx show`` tells.
    """
    import httpx

    path = fx_target(settings)
    make = client or (lambda: httpx.Client(timeout=settings.http_timeout_s, follow_redirects=True))
    try:
        with make() as http:
            table = update_fx_file(path, http)
    except FxError as exc:
        log.warning("FX rates not updated: %s; %s left as it was", exc, path)
        return None
    log.info("FX rates of %s written to %s and in use", table.as_of, path)
    return table
