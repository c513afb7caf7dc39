"""Offers and the GPU catalog as polars frames, the input of :func:`pricing.rank.rank`.

One row per offer. Money stays exact where it is money: ``price_amount`` is a polars
Decimal in ``price_currency`` per ``price_unit`` and ``price_basis``; the derived
``usd_per_hour`` (whole instance) is Float64, good enough to rank by. Enumerations are
strings, except ``term``, a polars Enum whose order (on-demand first, then interruptible,
then commitments by length) breaks ties, and the ones the costing compares on every row
(:data:`ENUM_COLUMNS`: form factor, GPU link, fabric, price unit and basis), polars Enums
of their schema enums: a comparison then reads one small integer per row, not a string
(``intra_node_scaling`` over 100k placed offers: 3.4 ms of CPU with strings, 2.1 with
Enums). A stored value outside its enum (a record written by another version) reads as
null, not stated, rather than failing the load. Text of few distinct values and no fixed
list (instance name, region, country, currency, the provider's GPU name:
:data:`CATEGORY_COLUMNS`) is a polars Categorical: a string column costs a 16-byte view a
row and its long values' bytes, a Categorical 4 bytes (at 1M offers these seven columns
held ~130 MB as text).

Two builders give the same frame (a test holds them equal): :func:`offers_to_frame` from
:class:`~adapters.schema.Offer` objects (a fetch, the offline sample) and
:func:`records_to_frame` from stored offer records, the JSON text of an offer's fields,
decoded by polars without building an ``Offer`` per row. Both read the offer's own fields
and derive the rest in :func:`_derive`: ``gpus``, ``commitment_hours``, the exact
``price_amount`` and ``usd_per_hour`` with the FX table passed in.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal

import polars as pl

from gpuscout.adapters.declarations import retired_providers
from gpuscout.adapters.gpus import GpuSpec, Precision, catalog
from gpuscout.adapters.schema import (
    HOURS_PER_MONTH,
    USD_QUANTUM,
    Fabric,
    FxTable,
    GpuFormFactor,
    GpuInterconnect,
    Offer,
    PriceBasis,
    PriceUnit,
    RentalTerm,
    default_fx,
    usd_per_hour_each,
)

from . import readings
from .efficiency import Efficiency, default_efficiency
from .offer_facts import with_offer_facts

__all__ = [
    "CATEGORY_COLUMNS",
    "CONFIG_KEYS",
    "ENUM_COLUMNS",
    "FABRIC_DTYPE",
    "FORM_FACTOR_DTYPE",
    "INTERCONNECT_DTYPE",
    "OFFER_SCHEMA",
    "TERM_DTYPE",
    "catalog_frame",
    "held_lightly",
    "offers_to_frame",
    "record_chunks_to_frame",
    "records_to_frame",
    "with_config_id",
]

#: Row number of an offer in its frame: breaks ties between term variants of one
#: configuration that cost the same (the earlier row wins), so equal inputs rank alike;
#: :func:`pricing.rank.rank_page` returns it, so a caller can fetch what it keeps per
#: frame row.
OFFER_ROW = "_offer_row"

#: Offers that differ only in these columns' complement (their term) are one configuration.
CONFIG_KEYS: tuple[str, ...] = ("provider", "offer_id", "region", "price_basis")

TERM_DTYPE = pl.Enum([t.value for t in RentalTerm])
FORM_FACTOR_DTYPE = pl.Enum([f.value for f in GpuFormFactor])
INTERCONNECT_DTYPE = pl.Enum([i.value for i in GpuInterconnect])
FABRIC_DTYPE = pl.Enum([f.value for f in Fabric])
#: The offer columns held as a polars Enum of their schema enum besides ``term``: the ones
#: the ranking compares on every row. The frame builders read them as text and cast them
#: leniently (:func:`_derive`): a value the enum does not hold becomes null.
ENUM_COLUMNS: dict[str, pl.Enum] = {
    "gpu_form_factor": FORM_FACTOR_DTYPE,
    "gpu_interconnect": INTERCONNECT_DTYPE,
    "fabric": FABRIC_DTYPE,
    "price_unit": pl.Enum([u.value for u in PriceUnit]),
    "price_basis": pl.Enum([b.value for b in PriceBasis]),
}

#: Offer columns of few distinct values and no fixed list, held as polars Categoricals (an
#: integer a row): at a million offers a text column holds ~15 MB of 16-byte views.
CATEGORY_COLUMNS = ("instance_name", "region", "country", "price_currency", "gpu_raw_name")

#: Decimal scale of ``price_amount``: 12 places hold any published price exactly.
PRICE_SCALE = 12

OFFER_SCHEMA: dict[str, pl.DataType] = {
    "provider": pl.String(),
    "offer_id": pl.String(),
    "seller": pl.String(),
    "instance_name": pl.Categorical(),
    "region": pl.Categorical(),
    "country": pl.Categorical(),
    "fetched_at": pl.Datetime("us", "UTC"),
    "gpu_model": pl.String(),
    "gpu_raw_name": pl.Categorical(),
    "gpu_vendor": pl.String(),
    "gpu_count": pl.Int32(),
    "gpu_fraction": pl.Float64(),
    "gpus": pl.Float64(),
    "gpu_memory_gb": pl.Float64(),
    "gpu_form_factor": FORM_FACTOR_DTYPE,
    "gpu_interconnect": INTERCONNECT_DTYPE,
    "gpu_nvlink_gbs": pl.Float64(),
    "cpu_model": pl.String(),
    "cpu_sockets": pl.Int32(),
    "cpu_cores": pl.Float64(),
    "vcpus": pl.Float64(),
    "ram_gb": pl.Float64(),
    "ram_ecc": pl.Boolean(),
    "storage_gb": pl.Float64(),
    "storage_type": pl.String(),
    "storage_included_gb": pl.Float64(),
    "boot_disk_min_gb": pl.Float64(),
    "public_bandwidth_up_mbps": pl.Float64(),
    "public_bandwidth_down_mbps": pl.Float64(),
    "fabric": FABRIC_DTYPE,
    "fabric_gbps": pl.Float64(),
    "multi_node": pl.Boolean(),
    "cooling": pl.String(),
    "price_amount": pl.Decimal(38, PRICE_SCALE),
    "price_currency": pl.Categorical(),
    "price_unit": ENUM_COLUMNS["price_unit"],
    "price_basis": ENUM_COLUMNS["price_basis"],
    "term": TERM_DTYPE,
    "term_variant": pl.String(),
    "interruption_band": pl.String(),
    "interruption_pct_per_month": pl.Float64(),
    "commitment_hours": pl.Float64(),
    "min_rental_hours": pl.Float64(),
    "billing_increment_s": pl.Int64(),
    "billing_cap_hours_per_month": pl.Float64(),
    "prepaid": pl.Boolean(),
    "usd_per_hour": pl.Float64(),
    "storage_usd_per_gb_hour": pl.Float64(),
    "ipv4_usd_per_hour": pl.Float64(),
    "boot_disk_usd_per_hour": pl.Float64(),
    "egress_usd_per_gb": pl.Float64(),
    "sla_uptime_pct": pl.Float64(),
    "reliability": pl.Float64(),
    "verified": pl.Boolean(),
    "datacenter": pl.Boolean(),
    "available_now": pl.Boolean(),
    "available_count": pl.Int64(),
    # share of the last 7 days' snapshots it was in stock in: not a field of the offer, set
    # from the stored snapshots by the loader (service.current); null without a database
    "in_stock_7d": pl.Float64(),
    # the seed's power, chassis, software and support fields, and their readings
    # (:data:`_READINGS`), for the requirement's filters and the checklist
    "disk_bandwidth_mbps": pl.Float64(),
    "psu_watts": pl.Float64(),
    "psu_redundancy": pl.String(),
    "psu_redundant": pl.Boolean(),
    "chassis_form_factor": pl.String(),
    "chassis_u": pl.Float64(),
    "os_images": pl.List(pl.String()),
    "os_image_keys": pl.List(pl.String()),
    "cuda_version": pl.String(),
    "cuda_version_key": pl.Int64(),
    "driver_version": pl.String(),
    "driver_version_key": pl.Int64(),
    "frameworks": pl.List(pl.String()),
    "framework_keys": pl.List(pl.String()),
    "backup_service": pl.Boolean(),
    "support_tier": pl.String(),
    "cpu_server_class": pl.Boolean(),
}

#: The prices of extras (disk, a public IPv4, egress) as the offer gives them, in its
#: ``price_currency``, and the USD column :func:`_derive` makes of each: disk per GB-hour
#: (the month is :data:`~adapters.schema.HOURS_PER_MONTH` hours), IPv4 and boot disk per hour,
#: egress per GB.
_EXTRA_PRICES: dict[str, tuple[str, float]] = {
    "storage_price_per_gb_month": ("storage_usd_per_gb_hour", float(HOURS_PER_MONTH)),
    "ipv4_price_per_hour": ("ipv4_usd_per_hour", 1.0),
    "boot_disk_price_per_hour": ("boot_disk_usd_per_hour", 1.0),
    "egress_price_per_gb": ("egress_usd_per_gb", 1.0),
}
#: Comparable readings of free-text fields (:mod:`pricing.readings`), made once per frame so
#: that a query's filter compares numbers and words instead of parsing text per request.
_READINGS: dict[str, pl.Expr] = {
    "psu_redundant": readings.psu_redundant(pl.col("psu_redundancy")),
    "chassis_u": readings.chassis_units(pl.col("chassis_form_factor")),
    "os_image_keys": pl.col("os_images").list.eval(readings.os_image_key(pl.element())),
    "cuda_version_key": readings.version_key(pl.col("cuda_version")),
    "driver_version_key": readings.version_key(pl.col("driver_version")),
    "framework_keys": pl.col("frameworks").list.eval(readings.framework_key(pl.element())),
    "cpu_server_class": readings.server_cpu(pl.col("cpu_model")),
    "interruption_pct_per_month": readings.band_pct(pl.col("interruption_band")),
}
#: Columns computed from an offer's fields rather than read from them.
_DERIVED = frozenset(
    {
        "gpus",
        "commitment_hours",
        "usd_per_hour",
        "in_stock_7d",
        *(c for c, _ in _EXTRA_PRICES.values()),
        *_READINGS,
    }
)
#: The offer fields a frame reads, as they are read: the prices as their decimal text (made
#: exact, or USD floats, in :func:`_derive`), the term and the :data:`ENUM_COLUMNS` as text
#: (made their Enums there).
_AS_TEXT = frozenset({"price_amount", "term", *ENUM_COLUMNS, *CATEGORY_COLUMNS})
_FIELDS: dict[str, pl.DataType] = {
    name: pl.String() if name in _AS_TEXT else dtype
    for name, dtype in OFFER_SCHEMA.items()
    if name not in _DERIVED
} | {name: pl.String() for name in _EXTRA_PRICES}
#: What :func:`records_to_frame` reads from each record (``fetched_at`` is not in it).
_RECORD_SCHEMA = {k: v for k, v in _FIELDS.items() if k != "fetched_at"}
#: The fields a price in USD per hour depends on.
_PRICE_FIELDS = ("price_amount", "price_currency", "price_unit", "price_basis", "term", "gpu_count")
_COMMITMENT_HOURS = {
    t.value: None if t.commitment_hours is None else float(t.commitment_hours) for t in RentalTerm
}
_UNITS = {u.value: u for u in PriceUnit}
_BASES = {b.value: b for b in PriceBasis}
_TERMS = {t.value: t for t in RentalTerm}


def _value(x: object) -> object:
    return getattr(x, "value", x)


def _row(o: Offer) -> tuple[object, ...]:
    """The :data:`_FIELDS` of one offer."""
    return (
        o.provider,
        o.offer_id,
        o.seller,
        o.instance_name,
        o.region,
        o.country,
        o.fetched_at,
        o.gpu_model,
        o.gpu_raw_name,
        _value(o.gpu_vendor),
        o.gpu_count,
        o.gpu_fraction,
        o.gpu_memory_gb,
        _value(o.gpu_form_factor),
        _value(o.gpu_interconnect),
        o.gpu_nvlink_gbs,
        o.cpu_model,
        o.cpu_sockets,
        o.cpu_cores,
        o.vcpus,
        o.ram_gb,
        o.ram_ecc,
        o.storage_gb,
        _value(o.storage_type),
        o.storage_included_gb,
        o.boot_disk_min_gb,
        o.public_bandwidth_up_mbps,
        o.public_bandwidth_down_mbps,
        _value(o.fabric),
        o.fabric_gbps,
        o.multi_node,
        _value(o.cooling),
        str(o.price_amount),
        o.price_currency,
        o.price_unit.value,
        o.price_basis.value,
        o.term.value,
        o.term_variant,
        o.interruption_band,
        o.min_rental_hours,
        o.billing_increment_s,
        o.billing_cap_hours_per_month,
        o.prepaid,
        o.sla_uptime_pct,
        o.reliability,
        o.verified,
        o.datacenter,
        o.available_now,
        o.available_count,
        o.disk_bandwidth_mbps,
        o.psu_watts,
        o.psu_redundancy,
        o.chassis_form_factor,
        None if o.os_images is None else list(o.os_images),
        o.cuda_version,
        o.driver_version,
        None if o.frameworks is None else list(o.frameworks),
        o.backup_service,
        o.support_tier,
        *(None if p is None else str(p) for p in (
            o.storage_price_per_gb_month, o.ipv4_price_per_hour, o.boot_disk_price_per_hour,
            o.egress_price_per_gb,
        )),
    )  # fmt: skip


def offers_to_frame(offers: Iterable[Offer], fx: FxTable | None = None) -> pl.DataFrame:
    """One row per offer in :data:`OFFER_SCHEMA`, plus ``config_id`` (:func:`with_config_id`)
    and the offer facts (:func:`pricing.offer_facts.with_offer_facts`).

    ``fx`` is the table non-USD prices convert with (``None``: the shipped one).
    """
    fields = pl.DataFrame([_row(o) for o in offers], schema=_FIELDS, orient="row")
    return _derive(fields, fx or default_fx())


def records_to_frame(
    records: Sequence[str] | bytes, fetched_at: pl.Series | Sequence[datetime], fx: FxTable
) -> pl.DataFrame:
    """The frame of stored offers: the same as :func:`offers_to_frame` of those offers.

    Each of ``records`` is the JSON text of an offer's fields, as
    :func:`db.records.record_json` writes them (enums by value, the price as decimal text,
    ``None`` fields left out; fields the frame does not hold are ignored), or ``records``
    is all of them as newline-delimited JSON bytes, and ``fetched_at`` the offers' fetch
    times, in the same order. Polars parses them all at once as newline-delimited JSON
    with the known types: no ``Offer`` per row.
    """
    return record_chunks_to_frame([(records, fetched_at)], fx)


def record_chunks_to_frame(
    chunks: Iterable[tuple[Sequence[str] | bytes, pl.Series | Sequence[datetime]]], fx: FxTable
) -> pl.DataFrame:
    """:func:`records_to_frame` of records read a chunk at a time (each chunk's records
    and their fetch times). Each chunk is parsed and given its offer columns as it comes,
    its empty columns held lightly, so the records' text and the full buffers of the
    columns they leave empty are held one chunk at a time, not for every offer at once (at
    a million offers either is gigabytes); ``config_id`` and the offer facts, which compare
    offers, are computed once over all of them."""
    parts = [held_lightly(_offer_columns(_fields(r, times), fx)) for r, times in chunks]
    frame = pl.concat(parts) if parts else _offer_columns(_fields([], []), fx)
    del parts
    return held_lightly(with_offer_facts(with_config_id(_one_chunk(frame))))


def _one_chunk(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each column in one chunk (a ranking joins a frame of many chunks
    several times slower), copied a column at a time: the copy costs one column's memory
    more, not the frame's."""
    columns = frame.columns
    return pl.DataFrame([frame.drop_in_place(name).rechunk() for name in columns])


def _fields(
    records: Sequence[str] | bytes, fetched_at: pl.Series | Sequence[datetime]
) -> pl.DataFrame:
    """The :data:`_FIELDS` of some stored records (see :func:`records_to_frame`)."""
    times = pl.Series("fetched_at", fetched_at, dtype=_FIELDS["fetched_at"])
    if not records:
        return pl.DataFrame(schema=_FIELDS)
    # a record is one line: JSON escapes the newlines inside its strings
    lines = records if isinstance(records, bytes) else "\n".join(records).encode()
    return (
        pl.read_ndjson(io.BytesIO(lines), schema=_RECORD_SCHEMA)
        .with_columns(times)
        .select(list(_FIELDS))
    )


def _derive(fields: pl.DataFrame, fx: FxTable) -> pl.DataFrame:
    """:data:`OFFER_SCHEMA`, ``config_id`` and the offer facts from the :data:`_FIELDS` of
    some offers, its empty columns held lightly (:func:`held_lightly`)."""
    return held_lightly(with_offer_facts(with_config_id(_offer_columns(fields, fx))))


def _offer_columns(fields: pl.DataFrame, fx: FxTable) -> pl.DataFrame:
    """:data:`OFFER_SCHEMA` from the :data:`_FIELDS` of some offers, row by row.

    The offers of a provider its adapter declares retired
    (:func:`adapters.declarations.retired_providers`) are left out: stored before it closed,
    or recorded, they are not for rent, so no frame holds them and nothing ranks them."""
    retired = retired_providers()
    if retired:
        fields = fields.filter(~pl.col("provider").is_in(sorted(retired)))
    prices = _prices(fields.select(_PRICE_FIELDS).unique(), fx)
    derivations = _DERIVATIONS | _extra_prices_usd(fx)
    return fields.join(prices, on=_PRICE_FIELDS, how="left", maintain_order="left").select(
        pl.col(name)
        if name not in _DERIVED and name not in _AS_TEXT
        else derivations[name].alias(name)
        for name in OFFER_SCHEMA
    )


def _extra_prices_usd(fx: FxTable) -> dict[str, pl.Expr]:
    """The USD columns of :data:`_EXTRA_PRICES`: each price (decimal text in the offer's
    currency, whose rate :func:`_prices` has checked) over its period, converted with ``fx``.
    Floats, as ``usd_per_hour``: they rank and add up, the offer keeps the exact price."""
    usd_per_unit = pl.col("price_currency").replace_strict(
        {c: float(1 / rate) for c, rate in fx.units_per_usd.items()},
        default=None,
        return_dtype=pl.Float64,
    )
    return {
        column: pl.col(name).cast(pl.Float64) * usd_per_unit / hours
        for name, (column, hours) in _EXTRA_PRICES.items()
    }


_DERIVATIONS: dict[str, pl.Expr] = {
    "gpus": pl.coalesce(pl.col("gpu_fraction"), pl.col("gpu_count").cast(pl.Float64)),
    "commitment_hours": pl.col("term").replace_strict(
        _COMMITMENT_HOURS, return_dtype=OFFER_SCHEMA["commitment_hours"]
    ),
    "price_amount": pl.col("_exact_price"),
    "term": pl.col("term").cast(TERM_DTYPE),
    # lenient: a value outside the enum (a record of another version) is not stated
    **{name: pl.col(name).cast(dtype, strict=False) for name, dtype in ENUM_COLUMNS.items()},
    **{name: pl.col(name).cast(pl.Categorical) for name in CATEGORY_COLUMNS},
    "usd_per_hour": pl.col("_usd_per_hour"),
    "in_stock_7d": pl.lit(None, pl.Float64),
    **_READINGS,
}


def _prices(keys: pl.DataFrame, fx: FxTable) -> pl.DataFrame:
    """Per distinct price (:data:`_PRICE_FIELDS`): the exact amount and USD per hour.

    The amount is the decimal text rounded half-even to :data:`PRICE_SCALE` places (what
    ``Decimal.quantize`` does). USD per hour is computed in Python, on the distinct prices
    only: it is exact decimal arithmetic (:func:`adapters.schema.usd_per_hour_each`, the
    arithmetic of ``Offer.usd_per_hour``, rounded like it) that a float expression would not
    reproduce to the last bit. The rows come back in no particular order (they are joined).
    """
    currencies = set(keys["price_currency"].to_list())
    unknown = currencies - fx.units_per_usd.keys()
    if unknown:
        raise ValueError(
            f"the FX table of {fx.as_of} ({fx.source}) has no rate for "
            f"{', '.join(sorted(unknown))}: offers priced in it cannot be compared in USD"
        )
    quantum, rest = USD_QUANTUM, _PRICE_FIELDS[1:]
    parts = []
    # the rate and the hours once per currency, unit, basis, term and GPU count (tens of
    # groups): the arithmetic per price is then a division or two and a rounding
    for (currency, unit, basis, term, gpu_count), part in keys.partition_by(
        rest, as_dict=True, maintain_order=False
    ).items():
        amounts = usd_per_hour_each(
            map(Decimal, part["price_amount"].to_list()),
            str(currency),
            _UNITS[str(unit)],
            _BASES[str(basis)],
            _TERMS[str(term)],
            int(gpu_count),
            fx=fx,
        )
        usd = [float(a.quantize(quantum)) for a in amounts]
        parts.append(part.with_columns(pl.Series("_usd_per_hour", usd, dtype=pl.Float64())))
    priced = pl.concat(parts) if parts else keys.with_columns(_usd_per_hour=pl.lit(0.0))
    return priced.with_columns(
        pl.col("price_amount").cast(OFFER_SCHEMA["price_amount"]).alias("_exact_price")
    )


def with_config_id(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``config_id`` (UInt32): equal for rows that differ only in their term.

    Ids follow the lexicographic order of (provider, offer_id, region, price_basis), a
    missing region first. Computed once when the frame is built, so that ranking groups and
    breaks ties by one integer column instead of four strings.
    """
    keyed = pl.concat_str([pl.col(k).fill_null("") for k in CONFIG_KEYS], separator="\x1f")
    return frame.with_columns(config_id=keyed.rank("dense").cast(pl.UInt32))


def held_lightly(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every column that holds no value as polars' null column of its dtype,
    which keeps no buffer of values; the other columns as they are, shared.

    Most providers fill few of the schema's parameter groups, so many columns of a
    snapshot's frame are empty, yet a frame read back from Arrow IPC (the kept frame every
    API load reads) holds each empty column's buffers in full: 16 bytes a row for a string
    column, 8 for a float, and so does a frame just made: 39 of the 79 columns of 100k
    synthetic offers held nothing, 77 MB resident read back, 47 MB held so (and ~30 MB less
    for one framed). Counting a column's nulls reads its validity once (cached by polars),
    not its values.
    """
    empty = [
        pl.lit(None, dtype=column.dtype).alias(column.name)
        for column in frame.iter_columns()
        if column.len() and column.null_count() == column.len()
    ]
    return frame.with_columns(empty) if empty else frame


def _spec_row(spec: GpuSpec, eff: Efficiency, varies: set[str]) -> dict[str, object]:
    row: dict[str, object] = {
        "gpu_model": spec.name,
        "gpu_family": spec.family,
        "catalog_vendor": spec.vendor.value,
        "catalog_form_factor": spec.form_factor.value,
        "catalog_memory_gb": spec.memory_gb,
        "form_factor_varies": spec.family in varies,
        "mfu_bf16": eff.mfu_bf16(spec.family),
        "pcie_no_p2p": spec.family in eff.scaling.pcie_no_p2p_families
        or spec.name in eff.scaling.pcie_no_p2p_families,
    }
    for p in Precision:
        figure = spec.figure(p)
        row[f"tflops_{p.value}"] = figure.tflops if figure else None
        row[f"tflops_{p.value}_basis"] = figure.basis.value if figure else None
        row[f"tflops_{p.value}_precision"] = figure.precision.value if figure else None
        row[f"tflops_{p.value}_note"] = figure.note(p) if figure else None
    return row


def catalog_frame(
    specs: Sequence[GpuSpec] | None = None, efficiency: Efficiency | None = None
) -> pl.DataFrame:
    """One row per GPU model: family, figures per precision, default BF16 MFU, P2P flag.

    ``tflops_<p>`` is the figure a job at precision ``p`` is ranked at (:meth:`GpuSpec.figure`:
    the datasheet's, one derived by a documented rule, or a fallback to a wider precision);
    ``tflops_<p>_basis`` says which (``datasheet``/``derived``/``fallback``),
    ``tflops_<p>_precision`` the precision the figure is at and ``tflops_<p>_note`` the words
    a ranking shows (null for a datasheet figure). ``form_factor_varies``: the model's family
    exists in several form factors, so an offer that does not state one is not known to be
    this model's (its variant was assumed, see :func:`adapters.gpus.conservative_variant`).
    """
    if specs is None and (efficiency is None or efficiency is default_efficiency()):
        return _default_catalog_frame()
    return _build_catalog_frame(specs, efficiency)


@functools.cache
def _default_catalog_frame() -> pl.DataFrame:
    """The catalog at the default efficiency, built once (~4 ms of Python a build: every
    ranking with its own ``mfu`` built it again, and every new snapshot's coverage)."""
    return _build_catalog_frame(None, None)


def _build_catalog_frame(
    specs: Sequence[GpuSpec] | None, efficiency: Efficiency | None
) -> pl.DataFrame:
    eff = efficiency or default_efficiency()
    schema: dict[str, pl.DataType] = {
        "gpu_model": pl.String(),
        "gpu_family": pl.String(),
        "catalog_vendor": pl.String(),
        "catalog_form_factor": FORM_FACTOR_DTYPE,
        "catalog_memory_gb": pl.Float64(),
        "form_factor_varies": pl.Boolean(),
        "mfu_bf16": pl.Float64(),
        "pcie_no_p2p": pl.Boolean(),
    }
    for p in Precision:
        schema[f"tflops_{p.value}"] = pl.Float64()
        schema[f"tflops_{p.value}_basis"] = pl.String()
        schema[f"tflops_{p.value}_precision"] = pl.String()
        schema[f"tflops_{p.value}_note"] = pl.String()
    every = tuple(catalog())
    chosen = specs if specs is not None else every
    forms: dict[str, set[str]] = {}
    for s in (*every, *chosen):
        forms.setdefault(s.family, set()).add(s.form_factor.value)
    varies = {family for family, seen in forms.items() if len(seen) > 1}
    rows = [_spec_row(s, eff, varies) for s in chosen]
    return pl.DataFrame(rows, schema=schema)
