"""A saved search is stored exactly or refused, and a stored one that does not validate is
reported, marked and skipped: it never stops a digest run, and no run tries it again."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from gpuscout.db.subscriptions import SubscriptionStatus, get_subscription
from gpuscout.service.digest.saved_search import CorruptSubscription, dump_search, load_search
from gpuscout.service.digest.schedule import run_digests, smtp_transport
from gpuscout.service.digest.subscriptions import SubscriptionManager, SubscriptionRequest
from gpuscout.service.settings import Settings

from .conftest import RecordingHandler
from .helpers import (
    JOB,
    NOW,
    REQUIREMENT,
    current_from_db,
    insert_active,
    link_in,
    seed_history,
    token_of,
)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"requirement": {"max_usd_per_hour": Infinity}}', "requirement.max_usd_per_hour"),
        ('{"requirement": {"max_usd_per_gpu_hour": 1e400}}', "requirement.max_usd_per_gpu_hour"),
        ('{"requirement": {"min_gpus": NaN}}', "requirement.min_gpus"),
        ('{"requirement": {"max_gpus": "Infinity"}}', "requirement.max_gpus"),
        ('{"job": {"hours": Infinity}}', "job.hours"),
        ('{"job": {"params": 7e9, "tokens": 1e999}}', "job.tokens"),
    ],
)
def test_a_non_finite_number_is_refused_naming_its_field(body: str, field: str) -> None:
    data = {"email": "ada@example.com", "name": "x", **json.loads(body)}
    with pytest.raises(ValidationError) as caught:
        SubscriptionRequest.model_validate(data)
    named = [
        e
        for e in caught.value.errors()
        if ".".join(map(str, e["loc"])) == field
        or e["msg"].endswith(f"{field}: must be a finite number")
    ]
    assert named, caught.value.errors()


def test_what_is_stored_reads_back_as_given() -> None:
    requirement_json, job_json = dump_search(REQUIREMENT, JOB)
    assert json.loads(requirement_json) == {"gpus": ["H100"], "min_gpus": 8.0, "max_gpus": 8.0}
    assert json.loads(job_json) == {"hours": 100.0}


CORRUPT = {
    # what the code before #14 stored for max_usd_per_hour=Infinity: the constraint lost
    "null": ('{"gpus": ["H100"], "max_usd_per_hour": null}', '{"hours": 100.0}'),
    "range": ('{"min_gpus": -3}', '{"hours": 100.0}'),
    "unknown gpu": ('{"gpus": ["H900"]}', '{"hours": 100.0}'),
    "not json": ('{"gpus": ["H1', '{"hours": 100.0}'),
    "bad job": ("{}", '{"hours": 1, "gpu_hours": 2}'),
    "bad serve": ("{}", '{"hours": 1, "serve": {"serve": "no-such-model"}}'),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_load_search_names_the_problem(engine: Engine, case: str) -> None:
    requirement_json, job_json = CORRUPT[case]
    record = get_subscription(
        engine, insert_active(engine, "x@example.com", requirement_json, job_json)
    )
    assert record is not None
    with pytest.raises(CorruptSubscription, match=f"subscription {record.id}: ") as caught:
        load_search(record)
    if case == "null":
        assert caught.value.problem.startswith("requirement.max_usd_per_hour: stored as null")


def test_a_corrupt_subscription_is_reported_marked_and_skipped_not_fatal(
    settings: Settings, engine: Engine, smtp_server: tuple[RecordingHandler, int]
) -> None:
    handler, _ = smtp_server
    seed_history(engine)
    current = current_from_db(engine)
    manager = SubscriptionManager(settings, engine, smtp_transport(settings), clock=lambda: NOW)
    good = manager.subscribe(
        SubscriptionRequest(email="ada@example.com", name="ok", requirement=REQUIREMENT, job=JOB)
    )
    manager.confirm(token_of(link_in(handler.messages.pop(), "/v1/subscriptions/confirm")))
    bad = {
        case: insert_active(engine, f"bad{i}@example.com", *CORRUPT[case])
        for i, case in enumerate(CORRUPT)
    }

    # a dry run reports each one and builds the good one; it writes nothing
    report = run_digests(settings, engine, now=NOW, current=current, dry_run=True)
    statuses = {o.subscription_id: o.status for o in report.outcomes}
    assert statuses == {good.id: "would_send", **{i: "invalid" for i in bad.values()}}
    for sub_id in bad.values():
        record = get_subscription(engine, sub_id)
        assert record is not None and record.status is SubscriptionStatus.ACTIVE

    # the real run sends the good one and marks the bad ones, with the reason
    report = run_digests(settings, engine, now=NOW, current=current)
    assert report.sent == 1 and report.failed == 0 and len(handler.messages) == 1
    assert report.count("invalid") == len(CORRUPT)
    for case, sub_id in bad.items():
        record = get_subscription(engine, sub_id)
        assert record is not None and record.status is SubscriptionStatus.INVALID
        assert record.problem, case
    null = get_subscription(engine, bad["null"])
    assert null is not None and "max_usd_per_hour" in (null.problem or "")

    # and no later run tries them again
    report = run_digests(settings, engine, now=NOW + timedelta(days=7), current=current)
    assert [o.subscription_id for o in report.outcomes] == [good.id]


def test_a_serve_request_rides_in_the_job_json_and_reads_back() -> None:
    from gpuscout.pricing.serve_rank import ServeRequest
    from gpuscout.service.digest.saved_search import load_search_json, load_serve_json

    serve = ServeRequest(serve="llama-3.1-70b", precision="fp8", tokens_per_day=1e9)
    requirement_json, job_json = dump_search(REQUIREMENT, JOB, serve)
    assert json.loads(job_json)["serve"]["serve"] == "llama-3.1-70b"
    assert load_search_json(1, requirement_json, job_json) == (REQUIREMENT, JOB)
    assert load_serve_json(1, job_json) == serve
    assert load_serve_json(1, dump_search(REQUIREMENT, JOB)[1]) is None  # a training search
    broken = job_json.replace("llama-3.1-70b", "no-such-model")
    with pytest.raises(CorruptSubscription, match="serve"):
        load_serve_json(1, broken)
