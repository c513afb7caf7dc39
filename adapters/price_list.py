"""Providers with no price API: their prices as they publish them on their own page, read on a
known day and kept in a data file, each a provider of its own.

Where a provider publishes prices only on a web page (CoreWeave, Crusoe, Nebius), the honest
source is that page, captured: a YAML file under ``adapters/data/`` whose top level says where
the prices were published and when they were read, and whose entries are the configurations
and prices the page lists, in the price-sheet format (``docs/price-sheets.md``; every key an
:class:`~adapters.schema.Offer` field, ``id``, ``source`` and ``gpu_name`` added). The file::

    page: https://www.coreweave.com/pricing      # where the provider publishes its prices
    read_on: 2026-09-20                          # the day they were read
    captured: how, and by whom, the page was read (a transcription's repository and commit)
    notes: what the page states beside the prices (billing increment, what is included)
    defaults: {price_currency: USD, price_unit: hour, ...}   # keys every entry shares
    offers:
      - {id: hgx-h100, gpu_name: NVIDIA HGX H100, gpu_count: 8, price_amount: "49.24", ...}

An entry's ``price_date`` defaults to ``read_on``, so every offer is as old as the reading and
its age says so; ``source`` defaults to the page. A provider's adapter is a subclass naming
its file (:attr:`PublishedPriceList.price_file`); ``gpuscout providers`` lists it with "price
list published at <page>, read <date>".
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from importlib import resources
from typing import Any, ClassVar

import httpx
import yaml

from .base import Adapter, ParseResult, ResponseFormatError
from .sheet import entry_offer

__all__ = ["PublishedPriceList", "read_price_list"]

#: The top-level keys of a price list file.
TOP_KEYS = frozenset({"page", "read_on", "captured", "notes", "defaults", "offers"})


@functools.cache
def read_price_list(filename: str) -> Mapping[str, Any]:
    """The price list ``adapters/data/<filename>``, decoded and checked: its ``page`` (an
    http(s) URL), ``read_on`` (a date) and ``offers`` (a list). A broken file is a ValueError
    naming it: it ships with the code, so this is a bug, found by the tests."""
    package = __package__ or "adapters"
    text = resources.files(package).joinpath("data", filename).read_text("utf-8")
    document = yaml.safe_load(text)
    problem = _problem(document)
    if problem:
        raise ValueError(f"adapters/data/{filename}: {problem}")
    return document


def _problem(document: Any) -> str | None:
    """Why ``document`` is not a price list, or ``None``."""
    if not isinstance(document, Mapping):
        return "not a YAML mapping"
    unknown = sorted(set(document) - TOP_KEYS)
    page, read_on = document.get("page"), document.get("read_on")
    if unknown:
        return f"unknown top-level keys {unknown}"
    if not isinstance(page, str) or not page.startswith(("https://", "http://")):
        return "'page' must be the http(s) URL the prices are published at"
    if not isinstance(read_on, date):
        return "'read_on' must be the date the page was read (YYYY-MM-DD)"
    if not isinstance(document.get("offers"), list):
        return "'offers' must be a list"
    if not isinstance(document.get("defaults", {}), Mapping):
        return "'defaults' must be a mapping"
    return None


class PublishedPriceList(Adapter):
    """A provider read from its published price page, captured on a known day.

    A subclass sets ``name``, ``title`` and ``price_file`` (under ``adapters/data/``); the
    page and the day read come from the file, so the adapter's ``source_url`` (and
    ``pricing_url``, the link to rent) and ``format_checked`` are the file's ``page`` and
    ``read_on``.
    """

    #: The price list's file under ``adapters/data/``.
    price_file: ClassVar[str]
    #: The day the page was read.
    read_on: ClassVar[date]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "price_file" in vars(cls):
            document = read_price_list(cls.price_file)
            cls.source_url = document["page"]
            cls.pricing_url = document["page"]
            cls.read_on = document["read_on"]

    @classmethod
    def source_text(cls) -> str:
        return f"price list published at {cls.source_url}, read {cls.read_on.isoformat()}"

    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """The captured price list (``client`` is unused: the prices ship in a data file)."""
        return [dict(read_price_list(self.price_file))]

    def decode(self, data: bytes, filename: str) -> Any:
        """A price list file as YAML (``gpuscout parse <provider> file.yaml``)."""
        try:
            return yaml.safe_load(data.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ResponseFormatError(self.name, f"{filename} is not YAML: {exc}") from None

    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        for payload in payloads:
            problem = _problem(payload)
            if problem:
                raise ResponseFormatError(self.name, f"not a price list: {problem}")
            shared = {
                "source": payload["page"],
                "price_date": payload["read_on"],
                **payload.get("defaults", {}),
            }
            for i, entry in enumerate(payload["offers"], start=1):
                where = f"offers[{i}]"
                merged = {**shared, **entry} if isinstance(entry, Mapping) else entry
                offer = entry_offer(where, merged, fetched_at, provider=self.name)
                if isinstance(offer, str):
                    result.skip(f"{where}: {offer}", f"{self.name}:{where}")
                else:
                    result.add_offer(offer, f"{self.name}:{where}")
        return result
