"""A run's skipped records summarised by reason: grouped, capped, and told in one line."""

from __future__ import annotations

import json

from gpuscout.adapters.base import SkippedRecord
from gpuscout.adapters.skip_summary import (
    ILLUSTRATIVE,
    MAX_REASON_CHARS,
    MAX_REASONS,
    NO_GPU,
    SkipSummary,
    skip_line,
    summarise_skips,
)

NOT_PROVISIONED = "region JarvisLabs does not provision (unknown-region)"


def records(reason: str, n: int) -> list[SkippedRecord]:
    return [SkippedRecord(reason, f"ref-{i}") for i in range(n)]


def test_records_group_by_reason_commonest_first() -> None:
    skipped = [*records("no GPU", 2), *records(NOT_PROVISIONED, 3), *records("absurd price", 2)]
    summary = summarise_skips(skipped)
    # ties in reason order, so equal runs give equal summaries
    assert summary.reasons == ((NOT_PROVISIONED, 3), ("absurd price", 2), ("no GPU", 2))
    assert summary.other == 0 and summary.total == 7


def test_fifty_thousand_malformed_rows_keep_the_cap_of_reasons() -> None:
    """Each malformed row names itself in its reason: the summary keeps the cap's worth of
    reasons and counts the rest as other, so what is stored stays small."""
    skipped = [SkippedRecord(f"row {i}: invalid price_amount") for i in range(50_000)]
    skipped += records(NOT_PROVISIONED, 5)
    summary = summarise_skips(skipped)
    assert len(summary.reasons) == MAX_REASONS
    assert summary.reasons[0] == (NOT_PROVISIONED, 5)
    assert summary.total == 50_005 and summary.other == 50_005 - 5 - (MAX_REASONS - 1)
    assert len(json.dumps(summary.as_dict())) < 2_000


def test_a_long_reason_is_cut() -> None:
    [(reason, n)] = summarise_skips(records("x" * 5_000, 2)).reasons
    assert len(reason) == MAX_REASON_CHARS and reason.endswith("…") and n == 2


def test_the_stored_form_reads_back() -> None:
    summary = summarise_skips([*records("no GPU", 4), *records(NOT_PROVISIONED, 1)], cap=1)
    stored = json.loads(json.dumps(summary.as_dict()))
    assert stored == {"reasons": {"no GPU": 4}, "other": 1}
    assert SkipSummary.from_dict(stored) == summary


def test_the_line_names_the_one_reason() -> None:
    line = skip_line("jarvislabs", summarise_skips(records(NOT_PROVISIONED, 3)))
    assert line == f"jarvislabs skipped 3 rows: {NOT_PROVISIONED}"
    assert len(line) <= 80


def test_the_line_counts_each_reason_and_the_rest() -> None:
    skipped = [*records("a", 4), *records("b", 3), *records("c", 2), *records("d", 1)]
    assert skip_line("acme", summarise_skips(skipped), top=2) == (
        "acme skipped 10 rows: a (4), b (3), other reasons (3)"
    )
    # a run stored before reasons were: its count alone
    assert skip_line("acme", SkipSummary(other=1)) == "acme skipped 1 row"


def test_offers_only_leaves_out_records_that_are_no_offer() -> None:
    summary = summarise_skips(
        [
            SkippedRecord("region X does not provision (r)", "a"),
            SkippedRecord(NO_GPU, "b"),
            SkippedRecord(f"sheet.yaml offers[3] (id x): {ILLUSTRATIVE}: not an offer", "c"),
        ]
    )
    assert summary.offers_only() == SkipSummary((("region X does not provision (r)", 1),))
    assert summarise_skips([SkippedRecord(NO_GPU, "b")]).offers_only().total == 0
