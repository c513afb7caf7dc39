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

:class:`Precedence` applies these rules to runs as they arrive, so that a snapshot can
store each provider's run as soon as it is final instead of holding the whole market: a
provider's own ok run with offers of its own name is final at once (rank 0 always wins);
what other runs give for a provider waits only while that provider is undecided.
:func:`apply_precedence` is the same rules over a finished collection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from .run import Origin, ProviderRun, RunStatus
from .schema import Offer

__all__ = [
    "CATALOG_ORDER",
    "SOURCE_RANKS",
    "Precedence",
    "apply_precedence",
    "in_run_order",
    "source_rank",
]

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


#: A provider's best source so far: its rank, the offers of that rank (in arrival order)
#: and the run that gave them (without its offers: only its provider, time and origin count).
_Held = tuple[int, list[Offer], ProviderRun]


class Precedence:
    """The precedence rules (module docstring) applied to runs as they arrive.

    :meth:`add` takes each run and returns the runs final now; :meth:`finish`, once every
    run is in, returns the rest. Together they give one run per provider, the same runs
    :func:`apply_precedence` gives, in the order they became final:

    * an ok run with at least one offer of rank 0 (its own adapter's, naming its provider)
      is final at once, holding those offers deduplicated: nothing can outrank it;
    * the offers a run gives for another provider (a feed's, a catalog's) are held per
      provider while that provider is undecided: dropped when its own run is final, replaced
      by a better rank, merged with an equal one;
    * any other run (failed, skipped, ok with no offer of rank 0: a catalog's own run, an
      empty answer) is held without its offers and, at :meth:`finish`, becomes the run of
      the source held for its provider (:func:`_covered`) or stays as it is;
    * providers that only a source names come last, in the order first named.

    Memory: a final run is let go at once; held are the waiting runs (no offers) and the
    feeds' and catalogs' offers of undecided providers.
    """

    def __init__(self) -> None:
        self._final: set[str] = set()
        self._waiting: list[ProviderRun] = []
        self._best: dict[str, _Held] = {}
        self._finished = False

    def add(self, run: ProviderRun) -> list[ProviderRun]:
        """Take ``run`` (one provider's, each provider once); the runs final now."""
        if self._finished:
            raise RuntimeError("Precedence.add after finish")
        own: list[Offer] = []
        if run.status is RunStatus.OK:
            source = dataclasses.replace(run, offers=[])
            for offer in run.offers:
                rank = source_rank(run, offer)
                if rank == 0:
                    own.append(offer)
                elif offer.provider not in self._final:
                    self._hold(offer, rank, source)
        if not own:  # an ok run waits without its offers, counted under their providers
            ok = run.status is RunStatus.OK and run.offers
            self._waiting.append(dataclasses.replace(run, offers=[]) if ok else run)
            return []
        self._final.add(run.provider)
        self._best.pop(run.provider, None)
        return [dataclasses.replace(run, offers=_deduped(own))]

    def finish(self) -> list[ProviderRun]:
        """The runs not final yet, once every run is in: the waiting runs in arrival order
        (covered by a source where one named their provider), then the providers only a
        source names."""
        self._finished = True
        out: list[ProviderRun] = []
        for run in self._waiting:
            held = self._best.pop(run.provider, None)
            out.append(run if held is None else _covered(run.provider, held))
        out.extend(_covered(provider, held) for provider, held in self._best.items())
        self._waiting, self._best = [], {}
        return out

    def _hold(self, offer: Offer, rank: int, source: ProviderRun) -> None:
        """Keep ``offer`` (of ``rank``, from ``source``) for its undecided provider."""
        held = self._best.get(offer.provider)
        if held is None or rank < held[0]:
            self._best[offer.provider] = (rank, [offer], source)
        elif rank == held[0]:
            held[1].append(offer)


def in_run_order(final: Iterable[ProviderRun], providers: Sequence[str]) -> list[ProviderRun]:
    """``final`` (what :class:`Precedence` gave) in the order of ``providers`` (each run's
    provider, as the runs were given or the adapters listed); a provider not among them
    after, in the order given."""
    place: dict[str, int] = {}
    for i, provider in enumerate(providers):
        place.setdefault(provider, i)
    return sorted(final, key=lambda run: place.get(run.provider, len(place)))


def apply_precedence(runs: Sequence[ProviderRun]) -> list[ProviderRun]:
    """One run per provider, each provider's offers from its best source (module docstring):
    :class:`Precedence` over ``runs``.

    Pure: the runs given are not changed. Runs keep their order; a provider that only a
    source names (no run of its own) comes after them, in the order first named.
    """
    precedence = Precedence()
    final = [out for run in runs for out in precedence.add(run)]
    final.extend(precedence.finish())
    return in_run_order(final, [run.provider for run in runs])


def _covered(provider: str, held: _Held) -> ProviderRun:
    """The run of ``provider`` whose offers came through another source's run (a feed's
    or a catalog's: rank 1 or 2; its own adapter's offers are never held)."""
    rank, offers, source = held
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
