"""The cluster fabric of an instance family, as its provider documents it.

Almost no provider API says which network joins its GPU nodes, yet a multi-node job is priced
wrongly without it: 8x A100 over 400 Gbps InfiniBand and 8x A100 over a 25 Gbps VPC are not the
same rental. The hyperscalers do document it per instance family (AWS EFA, Azure ND-series
InfiniBand, GCP A3/A4 GPU NICs, OCI RDMA cluster networks), so ``data/fabrics.csv`` holds one
row per provider and instance type pattern:

* ``provider``: the adapter's ``name`` (``aws``, ``azure``, ``gcp``, ``oci`` ...);
* ``match``: an anchored regular expression (``^...$``) over the name the adapter gives the
  offer, its ``offer_id`` (the instance type, VM size, machine type or shape);
* ``fabric``: a :class:`~adapters.schema.Fabric` value;
* ``fabric_gbps``: the node's aggregate bandwidth on that fabric in Gbps, as the page states it
  (8 x 400 Gb/s => 3200); empty when the page names the fabric but no figure;
* ``multi_node``: ``true`` when the provider documents clustering these nodes over that fabric,
  empty when it does not say;
* ``source`` and ``quote``: the provider's own page and the phrase of it that states the row.

Nothing is inferred from a GPU model or a family name: a size the page does not list is left
out, so its offers keep ``fabric=None``. EFA rows are ``multi_node`` because EFA exists for
inter-instance traffic ("enhances the performance of inter-instance communication that is
critical for scaling AI/ML and HPC applications", docs.aws.amazon.com/AWSEC2/latest/UserGuide/
efa.html). GCP's A3 High and A3 Mega carry GPU traffic over GPUDirect-TCPX/TCPXO, which is TCP
over Ethernet, hence ``ethernet``; their figure is the page's "Max total bandwidth" of the node.
The contract applies the table to every offer (:meth:`adapters.base.ParseResult.add`): where
an adapter's API states the fabric itself (AWS ``DescribeInstanceTypes`` ``NetworkInfo``,
Mithril ``network_type``, Cudo ``networkType``), the API's fields win and this table only fills
what the adapter left unset.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import re
from typing import Any

from .schema import Fabric, OfferFields
from .tables import package_text

__all__ = ["FabricRow", "fabric_fields", "fabric_rows", "load_fabric_rows", "named_fabric"]

_DATA_FILE = "data/fabrics.csv"
_COLUMNS = ("provider", "match", "fabric", "fabric_gbps", "multi_node", "source", "quote")
_BOOLEANS = {"true": True, "false": False, "": None}


@dataclasses.dataclass(frozen=True, slots=True)
class FabricRow:
    """One documented instance type pattern of one provider."""

    provider: str
    pattern: re.Pattern[str]
    fabric: Fabric
    fabric_gbps: float | None
    multi_node: bool | None
    source: str
    quote: str

    def matches(self, name: str) -> bool:
        """Whether ``name`` (an offer's ``offer_id``) is one of the documented types."""
        return self.pattern.fullmatch(name) is not None

    def fields(self) -> OfferFields:
        """The offer fields this row states; a figure the page does not give stays ``None``."""
        return {
            "fabric": self.fabric,
            "fabric_gbps": self.fabric_gbps,
            "multi_node": self.multi_node,
        }


def _parse_row(row: dict[str, str], line: int) -> FabricRow:
    where = f"{_DATA_FILE} line {line}"
    match = row["match"].strip()
    if not (match.startswith("^") and match.endswith("$")):
        raise ValueError(f"{where}: match {match!r} must be anchored with ^ and $")
    try:
        pattern = re.compile(match)
    except re.error as exc:
        raise ValueError(f"{where}: match {match!r} is not a regular expression: {exc}") from None
    try:
        fabric = Fabric(row["fabric"].strip())
    except ValueError:
        known = ", ".join(f.value for f in Fabric)
        raise ValueError(f"{where}: fabric {row['fabric']!r} is not one of {known}") from None
    raw_gbps = row["fabric_gbps"].strip()
    try:
        gbps = float(raw_gbps) if raw_gbps else None
    except ValueError:
        raise ValueError(f"{where}: fabric_gbps {raw_gbps!r} is not a number") from None
    if gbps is not None and gbps <= 0:
        raise ValueError(f"{where}: fabric_gbps {raw_gbps!r} must be positive")
    raw_multi = row["multi_node"].strip().lower()
    if raw_multi not in _BOOLEANS:
        raise ValueError(f"{where}: multi_node {row['multi_node']!r} must be true, false or empty")
    provider, source, quote = row["provider"].strip(), row["source"].strip(), row["quote"].strip()
    if not provider:
        raise ValueError(f"{where}: provider is required")
    if not source.startswith("https://"):
        raise ValueError(f"{where}: source {source!r} must be an https:// URL")
    if not quote:
        raise ValueError(f"{where}: quote is required (the phrase of the source that states it)")
    return FabricRow(provider, pattern, fabric, gbps, _BOOLEANS[raw_multi], source, quote)


def load_fabric_rows(text: str) -> tuple[FabricRow, ...]:
    """Parse the CSV ``text``; a malformed row is a ``ValueError`` naming its line."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise ValueError(f"{_DATA_FILE}: columns must be {', '.join(_COLUMNS)}")
    return tuple(_parse_row(row, line) for line, row in enumerate(reader, start=2))


@functools.cache
def fabric_rows() -> tuple[FabricRow, ...]:
    """Every row of ``fabrics.csv``, in file order; read on first use."""
    return load_fabric_rows(package_text(_DATA_FILE))


@functools.cache
def _rows_of(provider: str) -> tuple[FabricRow, ...]:
    return tuple(row for row in fabric_rows() if row.provider == provider)


def fabric_fields(provider: str, name: str) -> OfferFields:
    """``fabric``, ``fabric_gbps`` and ``multi_node`` of the first row matching ``name``.

    ``provider`` is the adapter's name and ``name`` the offer's ``offer_id``. An undocumented
    name gives ``{}``, so spreading the result into an offer's fields changes nothing for it:

    >>> fabric_fields("azure", "Standard_ND96isr_H100_v5")["fabric_gbps"]
    3200.0
    >>> fabric_fields("azure", "Standard_NC24ads_A100_v4")
    {}
    """
    return dict(_documented(provider, name))  # type: ignore[return-value]


@functools.lru_cache(maxsize=4096)
def _documented(provider: str, name: str) -> tuple[tuple[str, object], ...]:
    """The first matching row's fields (cached: one provider lists a name in many regions)."""
    for row in _rows_of(provider):
        if row.matches(name):
            return tuple(row.fields().items())
    return ()


#: The fabrics an API names in a field of its own; EFA is AWS's, told by its instance types.
_NAMED = {f.value: f for f in (Fabric.INFINIBAND, Fabric.ROCE, Fabric.ETHERNET)}


def named_fabric(word: Any) -> Fabric | None:
    """The fabric a provider's API states for an instance type in a field of its own (Cudo
    ``networkType``, Mithril ``network_type``: ``"InfiniBand"``, ``"RoCE"``, ``"Ethernet"``);
    ``None`` for any other word.
    """
    return _NAMED.get(str(word or "").strip().lower())
