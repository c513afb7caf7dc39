"""gpuhunt's published catalog: one zip per provider, refreshed every hour, no account.

dstack's gpuhunt collects each provider's offers every hour (``.github/workflows/
catalogs.yml``, cron ``5 * * * *``) and publishes each provider on its own
(``.github/scripts/publish_catalog.sh``): ``<base>/<provider>/version`` holds the newest
version (``YYYYMMDD-<run>``, the day it was collected), written last, and
``<base>/<provider>/<version>/catalog.zip`` holds one file, ``<provider>.csv``. The base is
``CATALOG_URL`` of ``src/gpuhunt/_internal/catalog.py``,
``https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3``; the providers published there
are the workflow's ``publish_catalog.sh`` jobs (aws, azure, cloudrift, gcp, lambdalabs,
nebius, oci, runpod, verda). All read at dstackai/gpuhunt @
35841515de3792fe6be73b0422ac8901b6b929c8; the code is licensed MPL-2.0 (its LICENSE file).

The CSV's columns are ``CATALOG_V2_FIELDS`` of ``src/gpuhunt/_internal/storage.py``, read by
name: ``instance_name``, ``location``, ``price`` (USD per hour for the whole instance),
``cpu``, ``memory`` (GB), ``gpu_count``, ``gpu_name``, ``gpu_memory`` (GB per GPU), ``spot``
(``True``/``False``: an interruptible price), ``disk_size`` (GB), ``gpu_vendor``, ``flags``,
``cpu_arch``, ``provider_data``. Rows without GPUs are not offers. ``location`` is the
provider's region, the offer's country read from it (:func:`adapters.regions.region_country`).
"""

from __future__ import annotations

import asyncio
import io
import re
import zipfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ProviderError, ResponseFormatError, request
from .published_catalog import (
    PublishedCatalog,
    add_catalog_offers,
    form_factor_in_name,
    gathered_payloads,
    parse_catalog_files,
)
from .regions import region_country
from .schema import OfferFields, RentalTerm
from .units import non_negative, positive_quantity, text, whole_count

__all__ = ["CATALOG", "PROVIDERS", "GpuhuntCatalogAdapter", "read_catalog_zip"]

API_BASE = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3"

CATALOG = PublishedCatalog(name="gpuhunt v3", licence="MPL-2.0")

#: gpuhunt's provider name -> the gpuscout provider its rows are offers of.
PROVIDERS: Mapping[str, str] = {
    "aws": "aws",
    "azure": "azure",
    "gcp": "gcp",
    "lambdalabs": "lambda",
    "nebius": "nebius",
    "oci": "oci",
    "runpod": "runpod",
    "verda": "verda",
}

_REQUIRED = ("instance_name", "location", "price", "gpu_count", "gpu_name", "spot")
#: A published version: the collection day and the workflow run (``20261207-4711``).
_VERSION = re.compile(r"^\d{8}-\d+$")


class GpuhuntCatalogAdapter(Adapter):
    """Every known provider's newest gpuhunt catalog, one offer per row with GPUs."""

    name: ClassVar[str] = "gpuhunt_catalog"
    title: ClassVar[str] = "gpuhunt catalog"
    source_url: ClassVar[str] = "https://github.com/dstackai/gpuhunt"
    #: the catalog itself; each offer's link to rent is its own provider's (adapters/rent.py)
    pricing_url: ClassVar[str] = "https://github.com/dstackai/gpuhunt"
    format_checked: ClassVar[str | None] = "2026-12-07"
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Every provider's catalog at once; one that fails is a skipped record, all failing
        the catalog's error."""
        answers = await asyncio.gather(
            *(self._fetch_one(client, source) for source in PROVIDERS), return_exceptions=True
        )
        return gathered_payloads(self.name, list(PROVIDERS), answers)

    async def _fetch_one(self, client: httpx.AsyncClient, source: str) -> dict[str, Any]:
        answer = await request(
            client, "GET", self.url(f"/{source}/version"), provider=self.name, policy=self.policy
        )
        version = answer.text.strip()
        if not _VERSION.match(version):
            raise ProviderError(self.name, f"{source}: version {version[:40]!r} is not YYYYMMDD-N")
        archive = await request(
            client,
            "GET",
            self.url(f"/{source}/{version}/catalog.zip"),
            provider=self.name,
            policy=self.policy,
        )
        return {
            "provider": source,
            "version": version,
            "csv": read_catalog_zip(archive.content, source, adapter=self.name),
        }

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return parse_catalog_files(
            self,
            payloads,
            fetched_at=fetched_at,
            key="provider",
            providers=PROVIDERS,
            required=_REQUIRED,
            file_name=lambda source: f"{source}.csv",
            parse_row=_parse_row,
            ref="gpuhunt",
        )


def read_catalog_zip(data: bytes, source: str, *, adapter: str) -> str:
    """The ``<source>.csv`` of a published ``catalog.zip``; anything else is a
    :class:`ResponseFormatError` naming what was wrong."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.read(f"{source}.csv").decode("utf-8")
    except KeyError:
        raise ResponseFormatError(adapter, f"{source}: catalog.zip has no {source}.csv") from None
    except (zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ResponseFormatError(adapter, f"{source}: bad catalog.zip: {exc}") from None


def _parse_row(
    result: ParseResult, row: Mapping[str, str], provider: str, version: str | None, ref: str
) -> None:
    """The offer of one catalog row: on demand, or interruptible where ``spot`` is True."""
    gpu_count = whole_count(row.get("gpu_count"), least=0)
    if gpu_count is None:
        result.skip(f"bad gpu_count {row.get('gpu_count')!r}", ref)
        return
    gpu_name = text(row.get("gpu_name"))
    if gpu_count == 0 or gpu_name is None:
        return  # a CPU-only type: not an offer, and not an error either
    spot = (row.get("spot") or "").strip().lower()
    if spot not in ("true", "false"):
        result.skip(f"bad spot {row.get('spot')!r}", ref)
        return
    instance = text(row.get("instance_name"))
    if instance is None:
        result.skip("row without an instance_name", ref)
        return
    location = text(row.get("location"))
    fields: OfferFields = {
        "provider": provider,
        "offer_id": instance,
        "region": location,
        "country": region_country(provider, location),
        "gpu_count": gpu_count,
        "vcpus": positive_quantity(row.get("cpu")),
        "ram_gb": positive_quantity(row.get("memory")),
        "storage_gb": non_negative(positive_quantity(row.get("disk_size"))),
        **CATALOG.fields(version),
    }
    term = RentalTerm.INTERRUPTIBLE if spot == "true" else RentalTerm.ON_DEMAND
    add_catalog_offers(
        result,
        ref,
        fields,
        {term: row.get("price")},
        gpu_name=gpu_name,
        gpu_memory_gb=positive_quantity(row.get("gpu_memory")),
        form_factor=form_factor_in_name(instance),
    )
