"""The common offer schema: one rentable configuration at one provider, location and term.

Every parameter group of the seed document (compute, memory and storage, network, power and
cooling, chassis, software, cost and term, support) has fields here. A field a provider does
not publish stays ``None``: nothing is guessed. Every quantity carries its unit in its name.

Money is exact: ``price_amount`` is a :class:`~decimal.Decimal` in ``price_currency``, per
``price_unit`` (hour, day, week, month or the whole term) and per ``price_basis`` (the whole
instance or one GPU). The one normalised figure, ``usd_per_hour`` for the whole instance, is
derived in :func:`usd_per_hour` from those fields and an FX table, never set by hand.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from importlib import resources
from typing import Annotated, Any, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    ValidationInfo,
    computed_field,
    field_validator,
    model_validator,
)

__all__ = [
    "FIELD_GROUPS",
    "HOURS_PER_DAY",
    "HOURS_PER_MONTH",
    "HOURS_PER_WEEK",
    "HOURS_PER_YEAR",
    "USD_QUANTUM",
    "Cooling",
    "Fabric",
    "FxTable",
    "GpuFormFactor",
    "GpuInterconnect",
    "Offer",
    "OfferFields",
    "PriceBasis",
    "PriceUnit",
    "RentalTerm",
    "StorageType",
    "Vendor",
    "default_fx",
    "fx_context",
    "hours_per_price_unit",
    "load_fx",
    "usd_per_hour",
    "usd_per_hour_each",
]

# --- time units --------------------------------------------------------------------------
HOURS_PER_DAY = Decimal(24)
HOURS_PER_WEEK = Decimal(168)
#: A billing month as the hyperscalers count it (AWS, Azure and GCP price pages all use
#: 730 hours = 8760 / 12).
HOURS_PER_MONTH = Decimal(730)
HOURS_PER_YEAR = Decimal(8760)


class Vendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    HUAWEI = "huawei"  # Ascend NPUs, rented on Chinese platforms
    OTHER = "other"


class GpuFormFactor(StrEnum):
    """How the accelerator is mounted: it decides the intra-node bandwidth."""

    SXM = "sxm"
    PCIE = "pcie"
    OAM = "oam"
    SUPERCHIP = "superchip"  # Grace-Hopper / Grace-Blackwell boards
    OTHER = "other"


class GpuInterconnect(StrEnum):
    """The GPU-to-GPU link inside one node."""

    NVLINK = "nvlink"
    NVLINK_BRIDGE = "nvlink_bridge"  # 2-4 PCIe cards joined by a bridge
    INFINITY_FABRIC = "infinity_fabric"
    PCIE = "pcie"


class StorageType(StrEnum):
    NVME = "nvme"
    SSD = "ssd"
    HDD = "hdd"
    NETWORK = "network"  # network volume / block storage


class Fabric(StrEnum):
    """The cluster fabric between nodes."""

    INFINIBAND = "infiniband"
    ROCE = "roce"
    EFA = "efa"
    ETHERNET = "ethernet"


class Cooling(StrEnum):
    AIR = "air"
    LIQUID = "liquid"


class RentalTerm(StrEnum):
    """How long the renter is bound. Commitments are named by their length."""

    ON_DEMAND = "on_demand"
    INTERRUPTIBLE = "interruptible"  # spot, bid, preemptible, low priority
    COMMIT_1D = "commit_1d"
    COMMIT_1W = "commit_1w"
    COMMIT_1MO = "commit_1mo"
    COMMIT_3MO = "commit_3mo"
    COMMIT_6MO = "commit_6mo"
    COMMIT_1Y = "commit_1y"
    COMMIT_3Y = "commit_3y"

    @property
    def is_commitment(self) -> bool:
        return self not in (RentalTerm.ON_DEMAND, RentalTerm.INTERRUPTIBLE)

    @property
    def commitment_hours(self) -> Decimal | None:
        """Length of the commitment in hours; ``None`` for on-demand and interruptible."""
        return _COMMITMENT_HOURS.get(self)


_COMMITMENT_HOURS: dict[RentalTerm, Decimal] = {
    RentalTerm.COMMIT_1D: HOURS_PER_DAY,
    RentalTerm.COMMIT_1W: HOURS_PER_WEEK,
    RentalTerm.COMMIT_1MO: HOURS_PER_MONTH,
    RentalTerm.COMMIT_3MO: 3 * HOURS_PER_MONTH,
    RentalTerm.COMMIT_6MO: 6 * HOURS_PER_MONTH,
    RentalTerm.COMMIT_1Y: HOURS_PER_YEAR,
    RentalTerm.COMMIT_3Y: 3 * HOURS_PER_YEAR,
}


class PriceUnit(StrEnum):
    """What period ``price_amount`` covers."""

    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    TERM = "term"  # the whole commitment, e.g. an Azure 3-year reservation


#: Hours one unit of price covers (a ``TERM`` price covers its commitment's hours).
_UNIT_HOURS: dict[PriceUnit, Decimal] = {
    PriceUnit.HOUR: Decimal(1),
    PriceUnit.DAY: HOURS_PER_DAY,
    PriceUnit.WEEK: HOURS_PER_WEEK,
    PriceUnit.MONTH: HOURS_PER_MONTH,
}


class PriceBasis(StrEnum):
    """Whether ``price_amount`` is for the whole instance or for one GPU of it."""

    INSTANCE = "instance"
    GPU = "gpu"


# --- FX ----------------------------------------------------------------------------------


class FxTable(BaseModel):
    """Units of each currency per 1 USD, with the date and source of the rates."""

    model_config = ConfigDict(frozen=True)

    as_of: str
    source: str
    units_per_usd: dict[str, Decimal]

    def rate(self, currency: str) -> Decimal:
        """Units of ``currency`` per 1 USD; KeyError names an unknown currency."""
        if currency not in self.units_per_usd:
            raise KeyError(f"no FX rate for currency {currency!r}")
        return self.units_per_usd[currency]


def load_fx(text: str) -> FxTable:
    """Parse an FX file: rates per ``base`` currency, as central banks publish them."""
    data = tomllib.loads(text)
    try:
        per_base = {k: Decimal(str(v)) for k, v in data["per_base"].items()}
        usd = per_base["USD"]
        as_of, source = str(data["as_of"]), str(data["source"])
    except KeyError as exc:
        raise ValueError(f"FX file lacks {exc.args[0]!r}") from None
    if any(v <= 0 for v in per_base.values()):
        raise ValueError("FX file has a rate <= 0")
    return FxTable(
        as_of=as_of,
        source=source,
        units_per_usd={k: v / usd for k, v in per_base.items()},
    )


@functools.cache
def default_fx() -> FxTable:
    """The FX table shipped beside this module (``fx_rates.toml``), read on first use."""
    package = __package__ or "adapters"
    return load_fx(resources.files(package).joinpath("fx_rates.toml").read_text("utf-8"))


#: The key of pydantic's validation context that names the FX table an :class:`Offer`
#: converts its price with (see :func:`fx_context`).
FX_CONTEXT_KEY = "fx"


def fx_context(table: FxTable) -> dict[str, Any]:
    """The validation context that makes an :class:`Offer` convert with ``table``:
    ``Offer.model_validate(data, context=fx_context(table))``. Without it an offer checks
    its currency against, and converts with, the shipped table (:func:`default_fx`)."""
    return {FX_CONTEXT_KEY: table}


def _context_fx(info: ValidationInfo) -> FxTable | None:
    context = info.context
    return context.get(FX_CONTEXT_KEY) if isinstance(context, dict) else None


def hours_per_price_unit(unit: PriceUnit, term: RentalTerm) -> Decimal:
    """Hours one ``unit`` of price covers; a ``TERM`` price covers the whole commitment.

    >>> hours_per_price_unit(PriceUnit.MONTH, RentalTerm.COMMIT_1Y)
    Decimal('730')
    """
    hours = term.commitment_hours if unit is PriceUnit.TERM else _UNIT_HOURS[unit]
    if hours is None:
        raise ValueError(f"a price per whole term needs a commitment, not {term.value}")
    return hours


def usd_per_hour(
    *, price_amount: Decimal, price_currency: str, price_unit: PriceUnit,
    price_basis: PriceBasis, term: RentalTerm, gpu_count: int, fx: FxTable | None = None,
) -> Decimal:  # fmt: skip
    """USD per hour for the whole instance (:func:`usd_per_hour_each` of one price).

    ``fx`` is the table non-USD prices convert with; ``None``: the shipped one.

    >>> usd_per_hour(price_amount=Decimal("2"), price_currency="USD",
    ...     price_unit=PriceUnit.HOUR, price_basis=PriceBasis.GPU,
    ...     term=RentalTerm.ON_DEMAND, gpu_count=8)
    Decimal('16')
    """
    price = (price_currency, price_unit, price_basis, term, gpu_count)
    return usd_per_hour_each([price_amount], *price, fx=fx)[0]


def usd_per_hour_each(
    amounts: Iterable[Decimal], currency: str, unit: PriceUnit, basis: PriceBasis,
    term: RentalTerm, gpu_count: int, fx: FxTable | None = None,
) -> list[Decimal]:  # fmt: skip
    """Whole-instance USD per hour of each of ``amounts``, all of one currency, unit, basis,
    term and GPU count: the one place prices are normalised, the rate and the hours looked
    up once (framing 100k stored prices runs it once per such group)."""
    rate, hours = (fx or default_fx()).rate(currency), hours_per_price_unit(unit, term)
    count = max(gpu_count, 1) if basis is PriceBasis.GPU else 1
    return [amount / rate / hours * count for amount in amounts]


#: Precision of the derived USD figures (a millionth of a dollar).
USD_QUANTUM = Decimal("0.000001")

# --- the offer ---------------------------------------------------------------------------

PositiveDecimal = Annotated[Decimal, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class Offer(BaseModel):
    """One rentable configuration at one provider, one location and one rental term."""

    #: The validator is built on first use (``defer_build``): a warm ``gpuscout offers``
    #: reads a kept frame and validates no offer, so it does not pay for building it.
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False, defer_build=True)

    # identity and provenance
    provider: Annotated[str, Field(min_length=1)]
    offer_id: Annotated[str, Field(min_length=1, description="the provider's own id")]
    seller: Annotated[
        str | None,
        Field(
            min_length=1,
            description="who rents the machine out when the provider lists others' machines"
            " (an aggregator's cloud, a price sheet's seller); None: the provider itself",
        ),
    ] = None
    instance_name: str | None = None
    region: str | None = None
    country: Annotated[str | None, Field(description="ISO 3166-1 alpha-2")] = None
    fetched_at: datetime
    raw_ref: Annotated[str | None, Field(description="link or reference to the raw record")] = None
    via_catalog: Annotated[
        str | None,
        Field(
            min_length=1,
            description="the published catalog the offer came through (another project's"
            " collection of the provider's prices); None: from the provider itself",
        ),
    ] = None
    catalog_version: Annotated[
        str | None, Field(min_length=1, description="the catalog's version or commit")
    ] = None
    catalog_licence: Annotated[
        str | None, Field(min_length=1, description="the catalog's licence (SPDX id)")
    ] = None

    # GPU
    gpu_model: Annotated[str | None, Field(description="canonical name in the GPU catalog")] = None
    gpu_raw_name: str | None = None
    gpu_vendor: Vendor | None = None
    gpu_count: NonNegativeInt
    gpu_fraction: Annotated[
        float | None, Field(gt=0, lt=1, description="share of one GPU for a slice")
    ] = None
    gpu_mig_profile: str | None = None
    gpu_memory_gb: PositiveFloat | None = None
    gpu_form_factor: GpuFormFactor | None = None
    gpu_interconnect: GpuInterconnect | None = None
    gpu_nvlink_gbs: PositiveFloat | None = None
    gpu_pcie_gen: Annotated[int | None, Field(ge=1, le=7)] = None

    # CPU
    cpu_model: str | None = None
    cpu_vendor: str | None = None
    cpu_arch: str | None = None
    cpu_sockets: PositiveInt | None = None
    cpu_cores: PositiveFloat | None = None
    vcpus: PositiveFloat | None = None

    # memory and storage
    ram_gb: PositiveFloat | None = None
    ram_ecc: bool | None = None
    storage_gb: Annotated[
        NonNegativeFloat | None,
        Field(
            description="the disk the configuration has, or the most it can be given where disk"
            " is allocated apart (see storage_included_gb for what the price includes)"
        ),
    ] = None
    storage_type: StorageType | None = None
    disk_bandwidth_mbps: PositiveFloat | None = None

    # network
    public_bandwidth_up_mbps: PositiveFloat | None = None
    public_bandwidth_down_mbps: PositiveFloat | None = None
    fabric: Fabric | None = None
    fabric_gbps: PositiveFloat | None = None
    multi_node: bool | None = None

    # power and cooling
    psu_watts: PositiveFloat | None = None
    psu_redundancy: Annotated[str | None, Field(description='e.g. "2+2", "N+1"')] = None
    cooling: Cooling | None = None

    # chassis
    chassis_form_factor: Annotated[str | None, Field(description='e.g. "4U"')] = None
    expandability_notes: str | None = None

    # software
    os_images: tuple[str, ...] | None = None
    cuda_version: str | None = None
    driver_version: str | None = None
    frameworks: tuple[str, ...] | None = None
    backup_service: bool | None = None

    # price and term
    price_amount: PositiveDecimal
    price_currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    price_unit: PriceUnit
    price_basis: PriceBasis
    term: RentalTerm
    term_variant: Annotated[
        str | None,
        Field(
            min_length=1,
            description="what tells apart prices of one configuration, location and term: "
            '"spot" vs "low-priority", a reservation\'s payment option, a spot zone',
        ),
    ] = None
    interruption_band: Annotated[
        str | None,
        Field(
            min_length=1,
            description="an interruptible offer's frequency of interruption as its provider"
            " publishes it for the type and region: the share of capacity reclaimed per month,"
            ' "<5%", "5-10%", ... ">20%" (AWS Spot Instance Advisor); None: not published (the'
            " preemption model's default rate applies)",
        ),
    ] = None
    min_rental_hours: NonNegativeFloat | None = None
    billing_increment_s: PositiveInt | None = None
    billing_cap_hours_per_month: Annotated[
        PositiveFloat | None,
        Field(
            description="hours of the hourly price billed at most in one calendar month: the"
            " monthly price cap of hourly billing (Vultr bills GPU instances up to 730 h and"
            " bare metal up to 672 h a month); None: no cap"
        ),
    ] = None
    prepaid: bool | None = None
    storage_price_per_gb_month: Annotated[
        Decimal | None,
        Field(
            ge=0,
            description="disk allocated beyond storage_included_gb, in price_currency per GB"
            " per month of 730 hours (HOURS_PER_MONTH); an adapter whose provider counts"
            " another month converts; None: not sold apart, or not published",
        ),
    ] = None
    storage_included_gb: Annotated[
        NonNegativeFloat | None,
        Field(
            description="disk GB the compute price includes (0: every GB is billed at"
            " storage_price_per_gb_month); None: not stated, taken as storage_gb where no"
            " storage price is published, else 0"
        ),
    ] = None
    boot_disk_min_gb: Annotated[
        NonNegativeFloat | None,
        Field(
            description="the least disk GB a configuration can be created with (its boot disk,"
            " a provider's minimum storage): allocated whatever the job asks, billed at"
            " storage_price_per_gb_month beyond storage_included_gb; None: none required"
        ),
    ] = None
    ipv4_price_per_hour: Annotated[
        Decimal | None,
        Field(
            ge=0,
            description="a public IPv4 address the configuration needs to be reached, billed"
            " apart, in price_currency per hour; None: included or not billed apart",
        ),
    ] = None
    boot_disk_price_per_hour: Annotated[
        Decimal | None,
        Field(
            ge=0,
            description="the boot disk one instance cannot start without, billed apart (a"
            " hyperscaler's network boot disk at its default size), in price_currency per"
            " hour; None: included or not billed apart",
        ),
    ] = None
    egress_price_per_gb: Annotated[
        Decimal | None,
        Field(ge=0, description="data sent out, in price_currency per GB; None: not published"),
    ] = None

    # service
    support_tier: str | None = None
    sla_uptime_pct: Annotated[float | None, Field(gt=0, le=100)] = None
    reliability: Fraction | None = None
    verified: bool | None = None
    datacenter: Annotated[bool | None, Field(description="datacenter (not community) host")] = None

    # availability
    available_now: bool | None = None
    available_count: NonNegativeInt | None = None

    #: The FX table :attr:`usd_per_hour` converts with, from the validation context
    #: (:func:`fx_context`); ``None``: the shipped one. Not a field: never stored.
    _fx: FxTable | None = PrivateAttr(default=None)

    @field_validator("fetched_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("fetched_at must be timezone-aware")
        return value.astimezone(UTC)

    @field_validator("price_currency")
    @classmethod
    def _known_currency(cls, value: str, info: ValidationInfo) -> str:
        if value not in (_context_fx(info) or default_fx()).units_per_usd:
            raise ValueError(f"unknown currency {value!r} (no FX rate)")
        return value

    @field_validator("country")
    @classmethod
    def _country(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if len(value) != 2 or not value.isalpha():
            raise ValueError(f"country must be an ISO 3166-1 alpha-2 code, not {value!r}")
        return value.upper()

    @model_validator(mode="after")
    def _coherent(self, info: ValidationInfo) -> Offer:
        if self.gpu_model is not None and self.gpu_count == 0:
            raise ValueError("gpu_count: 0 GPUs but a gpu_model is set")
        if self.gpu_fraction is not None and self.gpu_count != 1:
            raise ValueError("gpu_fraction: a GPU slice must have gpu_count 1")
        if self.price_unit is PriceUnit.TERM and not self.term.is_commitment:
            raise ValueError(f"price_unit: a per-term price needs a commitment, not {self.term}")
        if self.price_basis is PriceBasis.GPU and self.gpu_count == 0:
            raise ValueError("price_basis: a per-GPU price on an offer with 0 GPUs")
        fx = _context_fx(info)
        if fx is not None:
            self._fx = fx
        return self

    # derived -----------------------------------------------------------------------------
    @computed_field  # type: ignore[prop-decorator]
    @property
    def usd_per_hour(self) -> Decimal:
        """Whole-instance USD per hour, from the price fields and the offer's FX table (the
        one its validation context named, else the shipped one).

        Rounded to a millionth of a dollar so that equal prices compare equal across runs.
        """
        price = (self.price_currency, self.price_unit, self.price_basis, self.term, self.gpu_count)
        return usd_per_hour_each([self.price_amount], *price, fx=self._fx)[0].quantize(USD_QUANTUM)

    def with_fx(self, fx: FxTable) -> Offer:
        """This offer, its USD figures converted with ``fx`` (its fields unchanged)."""
        if fx is self._fx:
            return self
        copy = self.model_copy()
        copy._fx = fx
        return copy

    @property
    def gpus(self) -> float:
        """GPUs in the offer, a slice counting as its fraction."""
        return self.gpu_fraction if self.gpu_fraction is not None else float(self.gpu_count)

    @property
    def usd_per_gpu_hour(self) -> Decimal | None:
        if self.gpus == 0:
            return None
        return self.usd_per_hour / Decimal(str(self.gpus))

    @property
    def key(self) -> str:
        """Stable identity of the offer across snapshots (the price may change).

        ``offer_id`` names the configuration, so the offers of one configuration and region
        differ only in ``term`` and ``term_variant``: the pricing engine compares them.
        """
        # str.__str__ of a StrEnum member is its value, without Enum's slow ``.value`` lookup
        key = (
            f"{self.provider}|{self.offer_id}|{self.region or ''}"
            f"|{str.__str__(self.term)}|{str.__str__(self.price_basis)}"
        )
        return key if self.term_variant is None else f"{key}|{self.term_variant}"

    def to_record(self) -> dict[str, Any]:
        """A flat JSON-able dict with the schema's field names, ``usd_per_hour`` included."""
        return self.model_dump(mode="json")


class OfferFields(TypedDict, total=False):
    """The keyword arguments of :class:`Offer`, for mypy: what an adapter hands to
    :meth:`adapters.base.ParseResult.add`.

    A misspelled or unknown field is a type error here (and a :class:`TypeError` at run
    time), never a silently skipped record. Every key is optional for the type checker, so
    that an adapter can build the fields of one configuration in parts; :class:`Offer`
    still requires its required fields when the record is validated. A test pins these keys
    to ``Offer.model_fields``.
    """

    provider: str
    offer_id: str
    seller: str | None
    instance_name: str | None
    region: str | None
    country: str | None
    fetched_at: datetime
    raw_ref: str | None
    via_catalog: str | None
    catalog_version: str | None
    catalog_licence: str | None
    gpu_model: str | None
    gpu_raw_name: str | None
    gpu_vendor: Vendor | None
    gpu_count: int
    gpu_fraction: float | None
    gpu_mig_profile: str | None
    gpu_memory_gb: float | None
    gpu_form_factor: GpuFormFactor | None
    gpu_interconnect: GpuInterconnect | None
    gpu_nvlink_gbs: float | None
    gpu_pcie_gen: int | None
    cpu_model: str | None
    cpu_vendor: str | None
    cpu_arch: str | None
    cpu_sockets: int | None
    cpu_cores: float | None
    vcpus: float | None
    ram_gb: float | None
    ram_ecc: bool | None
    storage_gb: float | None
    storage_type: StorageType | None
    disk_bandwidth_mbps: float | None
    public_bandwidth_up_mbps: float | None
    public_bandwidth_down_mbps: float | None
    fabric: Fabric | None
    fabric_gbps: float | None
    multi_node: bool | None
    psu_watts: float | None
    psu_redundancy: str | None
    cooling: Cooling | None
    chassis_form_factor: str | None
    expandability_notes: str | None
    os_images: tuple[str, ...] | None
    cuda_version: str | None
    driver_version: str | None
    frameworks: tuple[str, ...] | None
    backup_service: bool | None
    price_amount: Decimal | None
    price_currency: str
    price_unit: PriceUnit
    price_basis: PriceBasis
    term: RentalTerm
    term_variant: str | None
    interruption_band: str | None
    min_rental_hours: float | None
    billing_increment_s: int | None
    billing_cap_hours_per_month: float | None
    prepaid: bool | None
    storage_price_per_gb_month: Decimal | None
    storage_included_gb: float | None
    boot_disk_min_gb: float | None
    ipv4_price_per_hour: Decimal | None
    boot_disk_price_per_hour: Decimal | None
    egress_price_per_gb: Decimal | None
    support_tier: str | None
    sla_uptime_pct: float | None
    reliability: float | None
    verified: bool | None
    datacenter: bool | None
    available_now: bool | None
    available_count: int | None


#: Every :class:`Offer` field in the checklist's parameter groups (``../shared/seed/README.md``),
#: in display order, from ``data/field_groups.toml``: the offer page, the checklist and the
#: per-provider field coverage all group by it (a test checks no field is missing).
FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    group: tuple(fields)
    for group, fields in tomllib.loads(
        resources.files(__package__ or "adapters")
        .joinpath("data", "field_groups.toml")
        .read_text("utf-8")
    )["fields"].items()
}
