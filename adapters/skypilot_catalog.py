"""SkyPilot's published catalog: one ``vms.csv`` per cloud, public, no account.

SkyPilot collects each cloud's instance types and prices and publishes them as CSV files in
the ``skypilot-org/skypilot-catalog`` repository, which SkyPilot itself reads from
``https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs``
(``HOSTED_CATALOG_DIR_URL`` in skypilot-org/skypilot ``sky/clouds/service_catalog/constants.py``)
under the schema version directory (``v8``): ``GET <base>/<cloud>/vms.csv``.

The columns (the repository's README, schema v5, and every ``catalogs/v8/*/vms.csv`` read at
the commits named in ``tests/fixtures/catalogs/SOURCES.md``; their order differs per cloud,
so they are read by name): ``InstanceType``, ``AcceleratorName``, ``AcceleratorCount``,
``vCPUs``, ``MemoryGiB``, ``Price``, ``SpotPrice``, ``Region``, ``AvailabilityZone`` (some
clouds), ``GpuInfo``. Units: ``Price`` and ``SpotPrice`` are USD per hour for the whole
instance (empty: not sold on that term); ``MemoryGiB`` is the instance's RAM in GiB;
``AcceleratorCount`` is a float (``8.0``). A row per availability zone repeats the region's
offer: the first one is kept (the contract's duplicate rule). ``GpuInfo`` is not read: its
``SizeInMiB`` is not in MiB for every cloud (RunPod writes ``80`` for an 80 GB A100).
``Region`` is the cloud's own region name, except RunPod's (a country code, its data
centres in ``AvailabilityZone``: ``REGION_ZONES`` of SkyPilot's
``sky/catalog/data_fetchers/fetch_runpod.py``) and Vast.ai's (the offer's ``geolocation``,
searched with ``georegion``: ``"France, FR, EU"``, ``fetch_vast.py``); the offer's country
is read from it (:func:`adapters.regions.region_country`).
CPU-only rows (no accelerator) are not offers. GCP's file prices a GPU apart from the machine
it attaches to (a row with an accelerator and no instance type): skipped with that reason;
its A2/A3 rows name no accelerator and read as CPU rows (gpuscout's GCP adapter prices them).

The repository holds no licence file (checked in the code index, see SOURCES.md): offers
say ``NOASSERTION``. Clouds whose provider gpuscout retired (CUDO Compute) or does not know
are not fetched; a cloud that fails is reported as a skipped record, the others are kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from .base import Adapter, ParseResult, ResponseFormatError, request
from .published_catalog import (
    PublishedCatalog,
    add_catalog_offers,
    form_factor_in_name,
    gathered_payloads,
    parse_catalog_files,
)
from .regions import region_country
from .run import FRESH_WITHIN_HOURS
from .schema import OfferFields, RentalTerm
from .units import gib_to_gb, positive_quantity, text, whole_count

__all__ = ["CATALOG", "CLOUDS", "SkyPilotCatalogAdapter"]

API_BASE = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8"

CATALOG = PublishedCatalog(name="skypilot-catalog v8", licence="NOASSERTION")

#: SkyPilot's cloud directory -> the gpuscout provider its rows are offers of.
CLOUDS: Mapping[str, str] = {
    "aws": "aws",
    "azure": "azure",
    "gcp": "gcp",
    "oci": "oci",
    "lambda": "lambda",
    "runpod": "runpod",
    "vast": "vastai",
    "nebius": "nebius",
    "hyperbolic": "hyperbolic",
    "hyperstack": "hyperstack",
    "jarvislabs": "jarvislabs",
    "lium": "lium",
    "mithril": "mithril",
    "primeintellect": "primeintellect",
    "seeweb": "seeweb",
    "shadeform": "shadeform",
    "verda": "verda",
    "fluidstack": "fluidstack",
    "do": "digitalocean",
}

_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")


class SkyPilotCatalogAdapter(Adapter):
    """Every known cloud's ``vms.csv`` of SkyPilot's catalog, one offer per priced term."""

    name: ClassVar[str] = "skypilot_catalog"
    title: ClassVar[str] = "SkyPilot catalog"
    source_url: ClassVar[str] = "https://github.com/skypilot-org/skypilot-catalog"
    #: the catalog itself; each offer's link to rent is its own provider's (adapters/rent.py)
    pricing_url: ClassVar[str] = "https://github.com/skypilot-org/skypilot-catalog"
    format_checked: ClassVar[str | None] = "2026-12-07"
    #: SkyPilot refreshes its catalogs every few hours; a day-old copy is still its latest.
    fresh_within_hours: ClassVar[float] = FRESH_WITHIN_HOURS
    base_url = API_BASE

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """Every cloud's file at once (one host: with no network all fail in one request's
        time); a cloud that fails is a skipped record, all failing the catalog's error."""
        answers = await asyncio.gather(
            *(self._fetch_one(client, cloud) for cloud in CLOUDS), return_exceptions=True
        )
        return gathered_payloads(self.name, list(CLOUDS), answers)

    async def _fetch_one(self, client: httpx.AsyncClient, cloud: str) -> dict[str, Any]:
        url = self.url(f"/{cloud}/vms.csv")
        response = await request(client, "GET", url, provider=self.name, policy=self.policy)
        version = response.headers.get("ETag", "").strip('"') or None
        return {"cloud": cloud, "version": version, "csv": response.text}

    def decode(self, data: bytes, filename: str) -> Any:
        """A recorded ``<cloud>/vms.csv`` file (its directory names the cloud)."""
        parts = filename.replace("\\", "/").split("/")
        if len(parts) < 2 or parts[-1] != "vms.csv":
            raise ResponseFormatError(self.name, f"{filename} is not a <cloud>/vms.csv file")
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ResponseFormatError(self.name, f"{filename} is not UTF-8: {exc}") from None
        return {"cloud": parts[-2], "version": None, "csv": content}

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        return parse_catalog_files(
            self,
            payloads,
            fetched_at=fetched_at,
            key="cloud",
            providers=CLOUDS,
            required=_REQUIRED,
            file_name=lambda cloud: f"{cloud}/vms.csv",
            parse_row=_parse_row,
            ref="skypilot",
        )


def _parse_row(
    result: ParseResult, row: Mapping[str, str], provider: str, version: str | None, ref: str
) -> None:
    """The offers of one ``vms.csv`` row: on demand (``Price``) and spot (``SpotPrice``)."""
    gpu_name = text(row.get("AcceleratorName"))
    if gpu_name is None:
        return  # a CPU-only type: not an offer, and not an error either
    gpu_count = whole_count(row.get("AcceleratorCount"))
    if gpu_count is None:
        result.skip(f"bad AcceleratorCount {row.get('AcceleratorCount')!r}", ref)
        return
    instance_type, region = text(row.get("InstanceType")), text(row.get("Region"))
    if instance_type is None:
        result.skip("row without an InstanceType", ref)
        return
    ram_gib = positive_quantity(row.get("MemoryGiB"))
    fields: OfferFields = {
        "provider": provider,
        "offer_id": instance_type,
        "region": region,
        "country": region_country(provider, region),
        "gpu_count": gpu_count,
        "vcpus": positive_quantity(row.get("vCPUs")),
        "ram_gb": gib_to_gb(ram_gib) if ram_gib is not None else None,
        **CATALOG.fields(version),
    }
    prices = {
        RentalTerm.ON_DEMAND: row.get("Price"),
        RentalTerm.INTERRUPTIBLE: row.get("SpotPrice"),
    }
    add_catalog_offers(
        result,
        ref,
        fields,
        prices,
        gpu_name=gpu_name,
        form_factor=form_factor_in_name(instance_type),
    )
