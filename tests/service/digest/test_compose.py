"""``DigestComposer``: the week's changes are read and framed once per run, then ranked per
subscription with its requirement; stale providers come from the current state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from gpuscout.pricing import Requirement
from gpuscout.service.digest import compose
from gpuscout.service.digest.build import SubscriptionView
from gpuscout.service.digest.compose import DigestComposer, stale_providers
from gpuscout.service.settings import Settings

from .helpers import JOB, NOW, REQUIREMENT, current_from_db, seed_history


def _view(id_: int, requirement: Requirement) -> SubscriptionView:
    return SubscriptionView(id_, f"digest {id_}", f"s{id_}@example.com", requirement, JOB)


def test_changes_are_read_and_framed_once_per_run(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_history(engine)
    calls = {"week_over_week": 0, "offers_to_frame": 0}

    def counted(name: str) -> Any:
        real = getattr(compose, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(compose, name, counted(name))
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    composer = DigestComposer(settings, current_from_db(engine), NOW, engine=engine)
    everything, only_alpha = (
        _view(1, REQUIREMENT),
        _view(2, REQUIREMENT.merged(providers=("alpha",))),
    )
    first, second = composer.inputs(everything)[0], composer.inputs(only_alpha)[0]
    composer.digest(everything)
    assert calls == {"week_over_week": 1, "offers_to_frame": 1}
    assert first is not None and second is not None
    # alpha cheaper, beta dearer, gamma's g1 gone and g2 new; delta unchanged (stale)
    assert [c.offer_key.split("|")[:2] for c in first.cheaper] == [["alpha", "a1"]]
    assert [c.offer.provider for c in first.dearer] == ["beta"]
    assert [c.offer.offer_id for c in first.gone] == ["g1"]
    assert [c.offer.offer_id for c in first.new] == ["g2"]
    assert [c.offer.provider for c in second.cheaper] == ["alpha"]
    assert second.dearer == second.new == second.gone == []


def test_stale_providers_carry_their_fetch_time_and_error(engine: Engine) -> None:
    seed_history(engine)
    (delta,) = stale_providers(current_from_db(engine))
    assert delta.provider == "delta" and delta.error == "HTTP 503"
    assert delta.fetched_at is not None and delta.fetched_at < NOW
