"""Which source a provider's offers come from when several give them.

A provider's prices can reach a snapshot by three ways: its own adapter (the provider's
API, with or without an account), a keyless feed run by another adapter (a public price
file), or a published catalog (another project's collection of many providers' prices,
:mod:`adapters.skypilot_catalog`, :mod:`adapters.gpuhunt_catalog`). The offline sample is
the fourth and last, chosen where the snapshot is read (:mod:`service.current`), not here.

:func:`apply_precedence` turns the runs of one collection into one run per provider:

* every run's offers are grouped by the provider they name (a catalog's run names many);
* for each provider the highest-ranked source that gave offers wins, whole: its own
  adapter, else a feed, else the published catalogs. An adapter that answered is the
  authority on what the provider sells now, so an older catalog row does not fill in a
  type it no longer lists;
* offers of equal rank (two catalogs listing the same provider) are merged, and the same
  offer seen twice (:attr:`~adapters.schema.Offer.key`: provider, instance type, region,
  term and variant) is one offer: of two catalogs, the one first in :data:`CATALOG_ORDER`;
* a provider whose own run failed or was skipped and which a catalog covers gets an ``ok``
  run of the catalog's origin, ``source`` naming the catalog, so every answer says where
  its prices came from and, by its ``started_at``, how old they are;
* a source's own run stays, with its skipped records, but holds only the offers of its own
  name (a catalog's none): the offers are counted once, under their provider.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .run import Origin, ProviderRun, RunStatus
from .schema import Offer

__all__ = ["CATALOG_ORDER", "SOURCE_RANKS", "apply_precedence", "source_rank"]

#: The rank of each way a provider's offers arrive, best first.
SOURCE_RANKS = ("own adapter", "keyless feed", "published catalog")


#: Published catalogs, the preferred first where two list the same offer: gpuhunt's is
#: collected every hour (dstackai/gpuhunt .github/workflows/catalogs.yml, cron "5 * * * *"),
#: SkyPilot's every 7 hours (its maintainers in skypilot-org/skypilot-catalog PR #39,
#: 2023-07-13: "our github action will run this script to update it per 7 hours").
CATALOG_ORDER = ("gpuhunt v3", "skypilot-catalog v8")


def source_rank(run: ProviderRun, offer: Offer) -> int:
    """The rank (index in :data:`SOURCE_RANKS`) of ``offer`` of ``run``: from its provider's
    own adapter, another adapter's feed, or a published catalog (it says which)."""
    if offer.via_catalog is not None:
        return 2
    return 0 if run.provider == offer.provider else 1


def apply_precedence(runs: Sequence[ProviderRun]) -> list[ProviderRun]:
    """One run per provider, each provider's offers from its best source (module docstring).

    Pure: the runs given are not changed. Runs keep their order; a provider that only a
    source names (no run of its own) comes after them, in the order first named.
    """
    # provider -> (rank, offers in run order) of its best source so far
    best: dict[str, tuple[int, list[Offer], ProviderRun]] = {}
    for run in runs:
        if run.status is not RunStatus.OK:
            continue
        for offer in run.offers:
            rank = source_rank(run, offer)
            held = best.get(offer.provider)
            if held is None or rank < held[0]:
                best[offer.provider] = (rank, [offer], run)
            elif rank == held[0]:
                held[1].append(offer)

    out: list[ProviderRun] = []
    placed: set[str] = set()
    for run in runs:
        own = best.get(run.provider)
        if own is None or own[0] == 0:
            if run.status is RunStatus.OK:
                run = dataclasses.replace(run, offers=_deduped(own[1]) if own else [])
            out.append(run)
        else:  # its own run failed, was skipped or found nothing: a feed or catalog covers it
            out.append(_covered(run.provider, own))
        placed.add(run.provider)
    for provider, held in best.items():
        if provider not in placed:
            out.append(_covered(provider, held))
            placed.add(provider)
    return out


def _covered(provider: str, held: tuple[int, list[Offer], ProviderRun]) -> ProviderRun:
    """The run of ``provider`` whose offers came through another source's run."""
    rank, offers, source = held
    if rank == 0:  # its own run (an ok one is never replaced)
        return source
    return ProviderRun(
        provider,
        RunStatus.OK,
        source.started_at,
        0.0,
        offers=_deduped(offers),
        origin=_origin(rank, source),
        source=source.provider,
        capture_date_known=source.capture_date_known,
    )


def _origin(rank: int, source: ProviderRun) -> Origin:
    """A feed's offers are as live (or as sampled) as its run; a catalog's are the
    catalog's, unless replayed from the offline sample."""
    if source.origin is Origin.SAMPLE or rank != 2:
        return source.origin
    return Origin.CATALOG


def _catalog_order(offer: Offer) -> int:
    """Where ``offer``'s catalog stands in :data:`CATALOG_ORDER` (an unknown one last, the
    provider's own offers first)."""
    if offer.via_catalog is None:
        return -1
    try:
        return CATALOG_ORDER.index(offer.via_catalog)
    except ValueError:
        return len(CATALOG_ORDER)


def _deduped(offers: Sequence[Offer]) -> list[Offer]:
    """``offers`` with each :attr:`~adapters.schema.Offer.key` kept once: the one of the
    catalog first in :data:`CATALOG_ORDER`, else the first given."""
    seen: set[object] = set()
    kept = []
    for offer in sorted(offers, key=_catalog_order):
        if offer.key not in seen:
            seen.add(offer.key)
            kept.append(offer)
    return kept
