"""Offers and the GPU catalog as polars frames, the input of :func:`pricing.rank.rank`.

One row per offer. Money stays exact where it is money: ``price_amount`` is a polars
Decimal in ``price_currency`` per ``price_unit`` and ``price_basis``; the derived
``usd_per_hour`` (whole instance) is Float64, good enough to rank by. Enumerations are
strings, except ``term``, a polars Enum whose order (on-demand first, then interruptible,
then commitments by length) breaks ties.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

import polars as pl

from adapters.gpus import GpuSpec, Precision, catalog
from adapters.schema import Offer, RentalTerm

from .efficiency import Efficiency, default_efficiency

__all__ = [
    "CONFIG_KEYS",
    "OFFER_SCHEMA",
    "TERM_DTYPE",
    "catalog_frame",
    "offers_to_frame",
    "with_config_id",
]

#: Offers that differ only in these columns' complement (their term) are one configuration.
CONFIG_KEYS: tuple[str, ...] = ("provider", "offer_id", "region", "price_basis")

TERM_DTYPE = pl.Enum([t.value for t in RentalTerm])

#: Decimal scale of ``price_amount``: 12 places hold any published price exactly.
PRICE_SCALE = 12

OFFER_SCHEMA: dict[str, pl.DataType] = {
    "provider": pl.String(),
    "offer_id": pl.String(),
    "seller": pl.String(),
    "instance_name": pl.String(),
    "region": pl.String(),
    "country": pl.String(),
    "fetched_at": pl.Datetime("us", "UTC"),
    "gpu_model": pl.String(),
    "gpu_raw_name": pl.String(),
    "gpu_vendor": pl.String(),
    "gpu_count": pl.Int32(),
    "gpu_fraction": pl.Float64(),
    "gpus": pl.Float64(),
    "gpu_memory_gb": pl.Float64(),
    "gpu_form_factor": pl.String(),
    "gpu_interconnect": pl.String(),
    "gpu_nvlink_gbs": pl.Float64(),
    "cpu_model": pl.String(),
    "cpu_sockets": pl.Int32(),
    "cpu_cores": pl.Float64(),
    "vcpus": pl.Float64(),
    "ram_gb": pl.Float64(),
    "ram_ecc": pl.Boolean(),
    "storage_gb": pl.Float64(),
    "storage_type": pl.String(),
    "public_bandwidth_up_mbps": pl.Float64(),
    "public_bandwidth_down_mbps": pl.Float64(),
    "fabric": pl.String(),
    "fabric_gbps": pl.Float64(),
    "multi_node": pl.Boolean(),
    "cooling": pl.String(),
    "price_amount": pl.Decimal(38, PRICE_SCALE),
    "price_currency": pl.String(),
    "price_unit": pl.String(),
    "price_basis": pl.String(),
    "term": TERM_DTYPE,
    "term_variant": pl.String(),
    "commitment_hours": pl.Float64(),
    "min_rental_hours": pl.Float64(),
    "billing_increment_s": pl.Int64(),
    "prepaid": pl.Boolean(),
    "usd_per_hour": pl.Float64(),
    "sla_uptime_pct": pl.Float64(),
    "reliability": pl.Float64(),
    "verified": pl.Boolean(),
    "datacenter": pl.Boolean(),
    "available_now": pl.Boolean(),
    "available_count": pl.Int64(),
}


def _value(x: object) -> object:
    return getattr(x, "value", x)


def _row(o: Offer) -> tuple[object, ...]:
    commitment = o.term.commitment_hours
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
        o.gpus,
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
        o.public_bandwidth_up_mbps,
        o.public_bandwidth_down_mbps,
        _value(o.fabric),
        o.fabric_gbps,
        o.multi_node,
        _value(o.cooling),
        o.price_amount.quantize(Decimal(1).scaleb(-PRICE_SCALE)),
        o.price_currency,
        o.price_unit.value,
        o.price_basis.value,
        o.term.value,
        o.term_variant,
        None if commitment is None else float(commitment),
        o.min_rental_hours,
        o.billing_increment_s,
        o.prepaid,
        float(o.usd_per_hour),
        o.sla_uptime_pct,
        o.reliability,
        o.verified,
        o.datacenter,
        o.available_now,
        o.available_count,
    )


def offers_to_frame(offers: Iterable[Offer]) -> pl.DataFrame:
    """One row per offer in :data:`OFFER_SCHEMA`, plus ``config_id`` (:func:`with_config_id`)."""
    rows = [_row(o) for o in offers]
    frame = pl.DataFrame(rows, schema=OFFER_SCHEMA, orient="row")
    return with_config_id(frame)


def with_config_id(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``config_id`` (UInt32): equal for rows that differ only in their term.

    Ids follow the lexicographic order of (provider, offer_id, region, price_basis), a
    missing region first. Computed once when the frame is built, so that ranking groups and
    breaks ties by one integer column instead of four strings.
    """
    keyed = pl.concat_str([pl.col(k).fill_null("") for k in CONFIG_KEYS], separator="\x1f")
    return frame.with_columns(config_id=keyed.rank("dense").cast(pl.UInt32))


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
    eff = efficiency or default_efficiency()
    schema: dict[str, pl.DataType] = {
        "gpu_model": pl.String(),
        "gpu_family": pl.String(),
        "catalog_vendor": pl.String(),
        "catalog_form_factor": pl.String(),
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
