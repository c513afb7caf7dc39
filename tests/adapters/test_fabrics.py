"""The fabric table: every row sourced and well-formed, lookups by the names adapters produce."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuscout.adapters import fabrics, get_adapter, registry
from gpuscout.adapters.fabrics import fabric_fields, fabric_rows, load_fabric_rows
from gpuscout.adapters.sample import replay_sample
from gpuscout.adapters.schema import Fabric, Offer

NOW = datetime(2026, 11, 1, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HEADER = "provider,match,fabric,fabric_gbps,multi_node,source,quote\n"
GOOD = "aws,^p5\\.48xlarge$,efa,3200,true,https://docs.aws.amazon.com/x,32 network cards\n"

#: ``offer_id``s the adapters produce from their recorded payloads (checked by parsing them):
#: aws: samples/aws (bulk index CSV, spot history, GpuInfo); azure: samples/azure retail page;
#: gcp: samples/gcp (A2) and tests/fixtures/gcp/skus_page_gpu.reconstructed.json (A3, A4, G2);
#: oci: tests/fixtures/oci cost estimator shapes and products.
FIXTURE_NAMES: dict[str, tuple[str, ...]] = {
    "aws": ("g5.xlarge", "g6.xlarge", "p4d.24xlarge", "p5.48xlarge"),
    "azure": ("Standard_NC24ads_A100_v4", "Standard_ND96isr_H100_v5"),
    "gcp": (
        "a2-highgpu-1g",
        "a2-highgpu-8g",
        "a2-megagpu-16g",
        "a3-highgpu-8g",
        "a4-highgpu-8g",
        "g2-standard-4",
        "g2-standard-96",
    ),
    "oci": ("BM.GPU.H100.8", "VM.GPU.A10.1"),
}

#: Rows whose types no recorded payload contains (documented, but no fixture to check against).
NOT_IN_FIXTURES = {
    ("aws", r"^p3dn\.24xlarge$"),
    ("aws", r"^p4de\.24xlarge$"),
    ("aws", r"^g4dn\.8xlarge$"),
    ("aws", r"^g4dn\.12xlarge$"),
    ("aws", r"^g4dn\.16xlarge$"),
    ("aws", r"^g4dn\.metal$"),
    ("aws", r"^g5\.8xlarge$"),
    ("aws", r"^g5\.12xlarge$"),
    ("aws", r"^g5\.16xlarge$"),
    ("aws", r"^g5\.24xlarge$"),
    ("aws", r"^g5\.48xlarge$"),
    ("azure", r"^Standard_ND40rs_v2$"),
    ("azure", r"^Standard_ND96asr_v4$"),
    ("azure", r"^Standard_ND96amsr_A100_v4$"),
    ("azure", r"^Standard_ND96isr_H200_v5$"),
    ("azure", r"^Standard_ND96isr_MI300X_v5$"),
    ("azure", r"^Standard_ND128isr_NDR_GB200_v6$"),
    ("gcp", r"^a3-ultragpu-8g$"),
    ("gcp", r"^a4x-highgpu-4g$"),
    ("gcp", r"^a3-megagpu-8g$"),
}


# --- the table ---------------------------------------------------------------------------


def test_table_loads_with_rows_for_each_documented_provider() -> None:
    rows = fabric_rows()
    assert len(rows) >= 20
    assert {row.provider for row in rows} >= {"aws", "azure", "gcp", "oci"}


def test_every_provider_is_a_registered_adapter() -> None:
    assert {row.provider for row in fabric_rows()} <= set(registry())


@pytest.mark.parametrize("row", fabric_rows(), ids=lambda r: f"{r.provider}:{r.pattern.pattern}")
def test_every_row_is_sourced_anchored_and_typed(row: fabrics.FabricRow) -> None:
    assert row.source.startswith("https://")
    assert len(row.quote) >= 10
    assert isinstance(row.fabric, Fabric)
    assert row.pattern.pattern.startswith("^") and row.pattern.pattern.endswith("$")
    assert row.fabric_gbps is None or row.fabric_gbps > 0
    # What a row fills is a valid set of Offer fields.
    assert set(row.fields()) <= set(Offer.model_fields)


def test_no_two_rows_of_a_provider_share_a_pattern() -> None:
    keys = [(row.provider, row.pattern.pattern) for row in fabric_rows()]
    assert len(keys) == len(set(keys))


# --- lookups -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "name", "fabric", "gbps"),
    [
        ("aws", "p5.48xlarge", Fabric.EFA, 3200.0),
        ("aws", "p5e.48xlarge", Fabric.EFA, 3200.0),
        ("aws", "p4d.24xlarge", Fabric.EFA, 400.0),
        ("aws", "g5.48xlarge", Fabric.EFA, 100.0),
        ("azure", "Standard_ND96isr_H100_v5", Fabric.INFINIBAND, 3200.0),
        ("azure", "Standard_ND96amsr_A100_v4", Fabric.INFINIBAND, 1600.0),
        ("azure", "Standard_ND40rs_v2", Fabric.INFINIBAND, 100.0),
        ("gcp", "a3-ultragpu-8g", Fabric.ROCE, 3200.0),
        ("gcp", "a4-highgpu-8g", Fabric.ROCE, 3200.0),
        ("gcp", "a3-highgpu-8g", Fabric.ETHERNET, 1000.0),
        ("oci", "BM.GPU.H100.8", Fabric.ROCE, None),
    ],
)
def test_lookup(provider: str, name: str, fabric: Fabric, gbps: float | None) -> None:
    assert fabric_fields(provider, name) == {
        "fabric": fabric,
        "fabric_gbps": gbps,
        "multi_node": True,
    }


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("aws", "g5.xlarge"),  # a g5 size EFA does not support
        ("aws", "p5.48xlarge.extra"),  # anchored: no prefix match
        ("aws", "xp5.48xlarge"),
        ("azure", "Standard_NC24ads_A100_v4"),  # NC without "r": no InfiniBand documented
        ("gcp", "a3-highgpu-1g"),  # single-NIC A3 sizes are not the 8-GPU row
        ("gcp", "a2-highgpu-8g"),  # A2: no per-size figure documented
        ("oci", "VM.GPU.A10.1"),
        ("lambda", "gpu_8x_h100_sxm5"),  # on-demand instance, not a 1-Click Cluster
        ("aws", ""),
        ("nosuchprovider", "p5.48xlarge"),  # rows are per provider
    ],
)
def test_unknown_name_gives_nothing(provider: str, name: str) -> None:
    assert fabric_fields(provider, name) == {}


def test_the_result_is_a_fresh_dict() -> None:
    first = fabric_fields("aws", "p5.48xlarge")
    first["fabric_gbps"] = 1.0
    assert fabric_fields("aws", "p5.48xlarge")["fabric_gbps"] == 3200.0


def test_module_examples() -> None:
    assert doctest.testmod(fabrics, raise_on_error=False).failed == 0


# --- against the names the adapters produce ----------------------------------------------


def test_rows_match_the_names_fixtures_produce() -> None:
    """Each row matches a name from its provider's recorded payloads, or is listed as having
    none; and no fixture name is matched by two rows (the first would silently win)."""
    unmatched = set()
    for row in fabric_rows():
        hits = [n for n in FIXTURE_NAMES.get(row.provider, ()) if row.matches(n)]
        if not hits:
            unmatched.add((row.provider, row.pattern.pattern))
    assert unmatched == NOT_IN_FIXTURES
    for provider, names in FIXTURE_NAMES.items():
        for name in names:
            rows = [r for r in fabric_rows() if r.provider == provider and r.matches(name)]
            assert len(rows) <= 1, (provider, name)


@pytest.mark.parametrize("provider", ["aws", "azure"])
def test_pinned_names_are_what_the_sample_produces(provider: str) -> None:
    (run,) = replay_sample([provider])
    produced = {offer.offer_id for offer in run.offers}
    assert set(FIXTURE_NAMES[provider]) <= produced


@pytest.mark.parametrize(
    ("provider", "files"),
    [
        ("gcp", ("skus_page_gpu.reconstructed.json", "skus_page_a100_a2.opencost.verbatim.json")),
        (
            "oci",
            (
                "cost_estimator_shapes_gpu.reconstructed.json",
                "cost_estimator_products_excerpt.reconstructed.json",
            ),
        ),
    ],
)
def test_pinned_names_are_what_the_fixtures_produce(provider: str, files: tuple[str, ...]) -> None:
    adapter = get_adapter(provider)()
    payloads = [adapter.decode((FIXTURES / provider / f).read_bytes(), f) for f in files]
    produced = {offer.offer_id for offer in adapter.parse(payloads, fetched_at=NOW).offers}
    assert set(FIXTURE_NAMES[provider]) <= produced


# --- malformed tables --------------------------------------------------------------------


def test_a_good_table_parses() -> None:
    (row,) = load_fabric_rows(HEADER + GOOD)
    assert row.fields() == {"fabric": Fabric.EFA, "fabric_gbps": 3200.0, "multi_node": True}


def test_empty_cells_stay_none() -> None:
    (row,) = load_fabric_rows(HEADER + "oci,^BM\\.GPU\\.H100\\.8$,roce,,,https://x.example,q q q\n")
    assert row.fabric_gbps is None and row.multi_node is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (GOOD.replace("^p5", "p5"), "anchored"),
        (GOOD.replace("xlarge$", "xlarge"), "anchored"),
        (GOOD.replace("^p5\\.48xlarge$", "^p5(.48xlarge$"), "not a regular expression"),
        (GOOD.replace(",efa,", ",nvlink,"), "fabric 'nvlink'"),
        (GOOD.replace(",3200,", ",fast,"), "fabric_gbps 'fast'"),
        (GOOD.replace(",3200,", ",0,"), "must be positive"),
        (GOOD.replace(",true,", ",yes,"), "multi_node 'yes'"),
        (GOOD.replace("https://docs.aws.amazon.com/x", "docs.aws.amazon.com/x"), "https://"),
        (GOOD.replace(",32 network cards", ","), "quote is required"),
        (GOOD.replace("aws,", " ,", 1), "provider is required"),
    ],
)
def test_a_bad_row_is_an_error_naming_its_line(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        load_fabric_rows(HEADER + GOOD + line)
    assert "line 3" in str(info.value)


def test_wrong_columns_are_an_error() -> None:
    with pytest.raises(ValueError, match="columns must be"):
        load_fabric_rows("provider,match,fabric\naws,^x$,efa\n")
