"""The answer about offers, declared once: the models of ``/v1/offers`` and its offers.

:class:`OffersPage`, :class:`RankedOffer` and its four groups are the one declaration of
the answer's shape: the router declares them as its response model (the OpenAPI schema),
:mod:`service.api.answers` shapes each ranking row by reading their fields
(:data:`TOP_LEVEL`, :data:`GROUPS`), and ``/v1/estimate`` reuses :class:`RankedOffer` and
:class:`Provenance`. A column added to a model is in every answer and in the schema.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .vocabulary import UtcTime

__all__ = [
    "GROUPS",
    "TOP_LEVEL",
    "CheckItem",
    "ChecklistSummary",
    "FieldGroup",
    "Hardware",
    "JobCost",
    "LeftOut",
    "OfferChecklist",
    "OfferDetail",
    "OfferLinks",
    "OffersPage",
    "PageLinks",
    "Performance",
    "Price",
    "Provenance",
    "RankedOffer",
]


class _Answer(BaseModel):
    """A part of an answer: exactly these keys, no others."""

    model_config = ConfigDict(extra="forbid")


class Hardware(_Answer):
    gpu_model: str
    gpu_family: str | None
    gpu_count: int
    gpus: float = Field(description="GPUs per instance; a slice counts as its fraction")
    nodes: int = Field(description="instances rented side by side for the job")
    total_gpus: float = Field(description="GPUs rented: nodes x gpus")
    job_gpus: float = Field(description="GPUs the job runs on (its count, else the instance's)")
    placement: str = Field(description='the topology: "64 node(s) x 8 GPUs, efa 400 Gbps/GPU"')
    gpu_memory_gb: float | None
    total_gpu_memory_gb: float | None
    gpu_form_factor: str | None = Field(description="as the provider states it; null: not stated")
    form_factor_stated: bool = Field(
        description="false: the provider names a family (H100) without its form factor; ranked"
        " as the slower variant named in gpu_model, and left out by a form-factor requirement"
    )
    gpu_interconnect: str | None
    fabric: str | None
    fabric_gbps: float | None = Field(description="cluster fabric of one node, aggregate")
    fabric_gbps_per_gpu: float | None
    multi_node: bool | None = Field(description="the provider offers it across nodes")
    cpu_cores: float | None
    vcpus: float | None
    ram_gb: float | None
    storage_gb: float | None
    storage_type: str | None
    storage_included_gb: float | None = Field(
        description="disk GB the compute price includes; null: not stated"
    )
    boot_disk_min_gb: float | None = Field(
        description="the least disk GB the configuration can be created with; null: none"
    )


class Price(_Answer):
    term: str = Field(description="the chosen (cheapest for the job) rental term")
    term_variant: str | None = Field(
        description="what tells apart prices of one configuration, location and term"
        ' ("spot" vs "low-priority", a payment option, a spot zone)'
    )
    price_amount: str | None = Field(description="as published, exact, in price_currency")
    price_currency: str
    price_unit: str
    price_basis: str
    usd_per_hour: float = Field(description="whole instance")
    usd_per_gpu_hour: float | None
    min_rental_hours: float | None
    billing_increment_s: int | None
    billing_cap_hours_per_month: float | None = Field(
        description="hourly billing stops at this many hours a calendar month (the monthly"
        " price cap); null: no cap"
    )
    storage_usd_per_gb_hour: float | None = Field(
        description="disk beyond the included, per GB-hour; null: not priced apart"
    )
    ipv4_usd_per_hour: float | None = Field(
        description="a public IPv4 the configuration needs, billed apart; null: not billed apart"
    )
    boot_disk_usd_per_hour: float | None = Field(
        description="the boot disk one instance cannot start without, billed apart (a"
        " hyperscaler's network boot disk at its default size), per instance-hour; null: not"
        " billed apart"
    )
    egress_usd_per_gb: float | None = Field(description="data sent out; null: not published")
    on_demand_usd_per_hour: float | None
    break_even_hours: float | None
    break_even: str | None = Field(description="why this term, against on-demand")


class Performance(_Answer):
    precision: str
    peak_tflops: float = Field(description="dense peak per GPU at the precision")
    peak_basis: str = Field(
        description="datasheet | derived (by a documented rule) | fallback (the figure at"
        " peak_precision: the GPU has none at the requested precision)"
    )
    peak_precision: str = Field(description="the precision peak_tflops is at")
    peak_note: str | None = Field(
        description='what the figure rests on, e.g. "ranked at FP16: no BF16 figure";'
        " null for a datasheet figure"
    )
    mfu: float
    scaling_intra_node: float = Field(
        description="node-link factor relative to the reference NVLink node (1.0)"
    )
    scaling_inter_node: float = Field(
        description="fabric factor relative to >= 400 Gbps/GPU RDMA (1.0); 1 node: 1.0"
    )
    scaling: float = Field(description="intra x inter: 1.0 at the scale the MFU was published at")
    effective_tflops: float = Field(description="job GPUs x peak x mfu x scaling")


class JobCost(_Answer):
    compute_hours: float | None
    wall_clock_hours: float | None = Field(description="with expected restarts on interruptible")
    interruptions_expected: float | None = Field(
        description="expected preemptions: nodes x rate per node-hour x wall hours"
    )
    interruptible_risk: str | None = Field(description="the caveat of an interruptible term")
    billed_hours: float | None = Field(
        description="compute hours at the minimum rental, rounded once to the billing"
        " increment, plus the expected restart hours unrounded (whole periods of a commitment)"
    )
    billing_rounding_hours: float | None = Field(
        description="billed_hours - wall_clock_hours: what the minimum, the increment or the"
        " commitment adds to the expected wall clock (negative under a monthly cap)"
    )
    job_usd_per_hour: float | None = Field(
        description="what the job pays an hour: usd_per_hour (one instance) x nodes"
    )
    job_cost_usd: float | None = Field(description="compute: billed hours x price x nodes")
    job_storage_gb: float | None = Field(
        description="disk GB per instance the job runs with (asked, else included; at least"
        " the boot disk)"
    )
    required_extras_usd: float | None = Field(
        description="what the configuration cannot run without: boot disk (beyond the included"
        " disk, or boot_disk_usd_per_hour), a public IPv4, over the billed hours"
    )
    storage_cost_usd: float | None = Field(
        description="the job's further disk beyond the included disk and the boot disk"
    )
    egress_cost_usd: float | None = Field(description="the job's egress GB at the egress price")
    all_in_cost_usd: float | None = Field(
        description="job_cost_usd + required_extras_usd + storage_cost_usd + egress_cost_usd"
    )
    usd_per_effective_tflop_hour: float | None = Field(
        description="all_in_cost_usd per effective TFLOP-hour: the ranking key"
    )
    caveats: str | None = Field(
        description="what the cost does not say (a configuration below 2 vCPU or 8 GB RAM per"
        " GPU, disk or egress without a published price); null: nothing"
    )
    memory_needed_gb: float | None = Field(description="training state over the whole job")
    memory_per_gpu_gb: float | None = Field(
        description="its ZeRO-3/FSDP shard over the job GPUs + activations + per-GPU floor"
    )


class OfferLinks(_Answer):
    history: str = Field(
        description="this offer's stored prices", examples=["/v1/offers/YWNtZXw4eC1o.../history"]
    )
    rent: str | None = Field(
        description="where to rent this configuration: the provider's console or launch page"
        " for its instance type and region where one exists, else its pricing page"
        " (adapters/rent.py); null only for a price sheet's seller gpuscout does not know",
        examples=[
            "https://console.aws.amazon.com/ec2/home?region=us-east-1"
            "#LaunchInstances:instanceType=p5.48xlarge"
        ],
    )


class ChecklistSummary(_Answer):
    """How many items of the renter's checklist (``pricing/checklist.py``) an offer meets."""

    met: int
    not_met: int
    unknown: int = Field(description="items whose fields the provider does not publish")
    items: int
    summary: str = Field(examples=["9 of 18 met, 3 unknown"])


class RankedOffer(_Answer):
    """One ranked offer: who and where at the top level, the rest in four groups."""

    id: str = Field(
        description="stable across snapshots and URL-safe: the offer in /v1/offers/{id}/history",
        examples=["YWNtZXw4eC1oMTAwfHVzLWVhc3QtMXxvbl9kZW1hbmR8aW5zdGFuY2U"],
    )
    rank: int
    provider: str
    seller: str | None = Field(
        description="who rents it out when the provider lists others' machines"
        " (an aggregator's cloud, a price sheet's seller); null: the provider itself"
    )
    offer_id: str
    instance_name: str | None
    region: str | None
    country: str | None
    reliability: float | None
    verified: bool | None
    available_now: bool | None
    available_count: int | None
    availability: str = Field(
        description="available | not stated | not available now (ranked after the others)"
    )
    fetched_at: UtcTime
    price_age_hours: float | None = Field(description="age of the price at generated_at")
    hardware: Hardware
    price: Price
    performance: Performance
    job: JobCost
    checklist: ChecklistSummary = Field(
        description="the renter's checklist for this offer, counted (items: /v1/offers/{id})"
    )
    links: OfferLinks


class Provenance(_Answer):
    """What every answer about offers says about where its data comes from."""

    source: str = Field(description="where the state was loaded from: database | sample")
    sample: bool = Field(
        description="true: some or all offers are recorded sample prices, not live (the"
        " bundled sample, or a snapshot stored from it); note names their capture dates"
    )
    origin: str = Field(description="live | sample | mixed: where the offers come from")
    sample_providers: list[str] = Field(description="providers whose offers are sample prices")
    catalog_providers: list[str] = Field(
        default_factory=list,
        description="providers whose offers were read from a published catalog (gpuhunt's,"
        " SkyPilot's), not their own API: each offer's via_catalog names it, /v1/providers"
        " their price age",
    )
    note: str | None = Field(
        description="what to know first: the sample's capture dates (or 'capture date"
        " unknown'), stale providers"
    )
    fx_as_of: str = Field(description="date of the FX table non-USD prices convert with")
    warnings: list[str] = Field(
        description="every caveat, including which FX table converted non-USD prices and"
        " the rows providers skipped, not ranked (rows skipped, not ranked: jarvislabs"
        " skipped 1 row: region JarvisLabs does not provision (unknown-region))"
    )


class LeftOut(_Answer):
    """Offers the query wants that the ranking cannot rank, grouped, with the reason."""

    provider: str
    gpu_raw_name: str | None
    gpu_model: str | None
    reason: str = Field(
        description="GPU not identified | GPU model not in the catalog"
        " | no TFLOPs figure at this or a wider precision; with a job, a placement reason"
        " (no cluster fabric stated, more nodes than available, does not fit one GPU, ...)"
    )
    offers: int


class PageLinks(_Answer):
    self: str = Field(description="this page, the query in canonical form")
    next: str | None = Field(description="the next page; null on the last")


class OffersPage(Provenance):
    snapshot_at: UtcTime | None
    generated_at: UtcTime = Field(
        description="the instant prices are aged against: the start of the answer's 5-minute"
        " cache window, or snapshot_at when that is later"
    )
    stale_providers: list[str] = Field(
        description="latest fetch failed or was skipped; older offers shown"
    )
    failed_providers: list[str] = Field(
        description="latest fetch ended in an error: with no offers from them (some may be"
        " hidden) unless also in stale_providers"
    )
    left_out: list[LeftOut] = Field(description="every wanted offer not ranked, and why")
    query: dict[str, object] = Field(description="the query in canonical form")
    count: int = Field(description="offers in this page")
    total: int = Field(description="qualifying configurations, over every page")
    offset: int = Field(description="offers ranked before this page")
    next: str | None = Field(
        description="cursor of the next page (pass it as cursor); null on the last page"
    )
    links: PageLinks
    offers: list[RankedOffer]


class CheckItem(_Answer):
    """One item of the renter's checklist for one offer."""

    key: str = Field(examples=["psu_redundancy"])
    group: str = Field(description="the field group it belongs to", examples=["Power and cooling"])
    item: str = Field(examples=["Redundant power supplies"])
    threshold: str = Field(examples=["a spare PSU (2+2, N+1, 1+1, 2N)"])
    status: Literal["met", "not met", "unknown"] = Field(
        description="unknown: the provider does not publish what decides it"
    )
    value: str = Field(
        description='the published fields behind it, "name: value"; "not stated" if none',
        examples=["psu_redundancy: 2+2"],
    )


class OfferChecklist(ChecklistSummary):
    checks: list[CheckItem]


class FieldGroup(_Answer):
    """One group of the offer's fields (the checklist's parameter groups)."""

    group: str = Field(examples=["Power and cooling"])
    fields: dict[str, Any] = Field(
        description="the fields the provider published, as in the stored record",
        examples=[{"psu_watts": 8000, "psu_redundancy": "2+2"}],
    )
    not_published: list[str] = Field(description="the group's fields left empty")


class AvailabilityShare(BaseModel):
    """How often the offer was in stock over a window: of its provider's successful
    snapshots since the offer was first listed in the window, those in which it was listed
    and not stated unavailable."""

    days: int = Field(description="the window: UTC days up to now")
    snapshots: int = Field(description="its provider's successful snapshots in the window")
    available_snapshots: int = Field(description="of those, the ones it was available in")
    share: float | None = Field(description="available_snapshots / snapshots; null: none")
    mean_count: float | None = Field(
        description="mean count available when available, where the provider publishes one"
    )


class OfferDetail(Provenance):
    """One current offer: every published field, grouped, and the renter's checklist."""

    id: str = Field(examples=["YWNtZXw4eC1oMTAwfHVzLWVhc3QtMXxvbl9kZW1hbmR8aW5zdGFuY2U"])
    key: str = Field(
        description="provider|offer_id|region|term|basis[|variant]",
        examples=["acme|8x-h100|us-east-1|on_demand|instance"],
    )
    offer_origin: Literal["live", "catalog", "sample"] = Field(
        description="where this offer's price comes from: its provider's held offers, fetched"
        " live, read from a published catalog (gpuhunt's, SkyPilot's: its via_catalog field"
        " names it) or the offline sample's recorded prices (replayed, or a snapshot stored"
        " from it); sample and origin above are of every offer, as in /v1/offers"
    )
    record_from: Literal["database", "sample", "frame"] = Field(
        description="where the fields come from: the stored record, the replayed sample, or"
        " (neither available) the columns the ranking reads"
    )
    fields: list[FieldGroup]
    checklist: OfferChecklist
    in_stock: list[AvailabilityShare] = Field(
        default_factory=list,
        description="its stock over 7 and 30 days, from the stored snapshots; empty without"
        " a database (the offline sample) or before the offer's first stored snapshot",
    )
    links: OfferLinks


#: Fields of an offer that are not ranking columns: made from the offer's key, and the
#: checklist summary (:mod:`pricing.offer_checklist`, for the answer's rows only).
DERIVED = ("id", "checklist", "links", "in_stock")


def _layout(model: type[BaseModel]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """A model's plain fields, and each nested model's fields under the nested one's name."""
    top: list[str] = []
    groups: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        if name in DERIVED:
            continue
        nested = info.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel):
            groups[name] = tuple(nested.model_fields)
        else:
            top.append(name)
    return tuple(top), groups


#: Which ranking columns an offer of the answer holds at its top level, and which in each
#: group, read from :class:`RankedOffer`: the models are the one declaration of the shape.
TOP_LEVEL, GROUPS = _layout(RankedOffer)
