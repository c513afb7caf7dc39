"""``gpuscout offers`` and ``gpuscout estimate`` through typer's CliRunner."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from gpuscout.adapters.schema import Fabric, PriceUnit, RentalTerm, default_fx
from gpuscout.db.current import CurrentState, state_from_offers
from gpuscout.service.cli import app
from gpuscout.service.commands import pricing as pricing_cli
from gpuscout.service.commands.pricing import flat_offer
from gpuscout.service.current import load_current
from tests.pricing.factories import make_offer

from ...pricing.test_estimate import LLAMA2_7B_GPU_HOURS

runner = CliRunner()
SAMPLE_NOTE = "sample prices from 2025-12-01, not live"

OFFERS = [
    make_offer(offer_id="h100-od", price_amount=Decimal("16")),
    make_offer(
        offer_id="h100-od",
        term=RentalTerm.COMMIT_1MO,
        price_amount=Decimal("8760"),  # 12 USD/h
        price_unit=PriceUnit.MONTH,
    ),
    make_offer(
        offer_id="a100",
        gpu_model="A100-SXM4-80GB",
        price_amount=Decimal("10"),
        fabric=Fabric.INFINIBAND,
        fabric_gbps=1600,
        multi_node=True,
    ),
    make_offer(offer_id="4090", gpu_model="RTX-4090", gpu_count=1, price_amount=Decimal("0.4")),
    make_offer(
        provider="sheet", seller="coreweave", offer_id="coreweave/a100", gpu_model="A100-SXM4-80GB"
    ),
]


@pytest.fixture(autouse=True)
def fake_current(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(sample: bool = False) -> CurrentState:
        return state_from_offers(OFFERS, fx=default_fx(), source="sample", note=SAMPLE_NOTE)

    monkeypatch.setattr(pricing_cli, "load_current", load)


def test_offers_json_ranks_and_notes_on_stderr() -> None:
    result = runner.invoke(app, ["offers", "--format", "json", "--gpu", "H100", "--hours", "700"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["sample"] is True and answer["note"] == SAMPLE_NOTE
    assert answer["query"] == {"gpus": ["H100"], "hours": 700.0}
    rows = answer["offers"]
    assert answer["count"] == len(rows) == 1
    assert [r["offer_id"] for r in rows] == ["h100-od"]
    assert rows[0]["price"]["term"] == "commit_1mo"
    assert "beats on-demand after 548 h" in rows[0]["price"]["break_even"]  # 730 x 12 / 16
    assert SAMPLE_NOTE in result.stderr
    # exact price as short text, derived figures rounded, ISO times, no internal columns
    assert rows[0]["price"]["price_amount"] == "8760"  # not 8760.000000000000
    cost = rows[0]["job"]["job_cost_usd"]
    assert cost == round(cost, 2)
    assert "T" in rows[0]["fetched_at"] and "config_id" not in rows[0]


def test_offers_json_is_the_api_answer() -> None:
    """The CLI's json is the body GET /v1/offers sends for the same query (one shape)."""
    from gpuscout.service.api.answer_schema import OffersPage

    result = runner.invoke(app, ["offers", "--format", "json", "--gpus", "H100,A100"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    OffersPage.model_validate(answer)
    assert answer["query"]["gpus"] == ["A100", "H100"]


def test_offers_jsonl_one_offer_a_line() -> None:
    result = runner.invoke(app, ["offers", "--format", "jsonl", "--limit", "3"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert [json.loads(line)["rank"] for line in lines] == [1, 2, 3]


def test_offers_csv_and_limit() -> None:
    result = runner.invoke(app, ["offers", "--format", "csv", "--limit", "2"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2
    assert {"rank", "provider", "gpu_model", "term", "job_cost_usd"} <= rows[0].keys()
    assert float(rows[0]["usd_per_effective_tflop_hour"]) <= float(
        rows[1]["usd_per_effective_tflop_hour"]
    )


def test_offers_table_and_preset() -> None:
    result = runner.invoke(app, ["offers", "--preset", "1xh100"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "no offer meets the requirement" in result.stderr


def test_a_former_preset_name_is_taken_with_a_note_and_not_listed() -> None:
    """``seed-8xa100`` is the former name of ``8xa100-pretrain``: the same answer, a note on
    stderr naming the new one; ``--help`` lists only the new names."""
    new = runner.invoke(app, ["offers", "--preset", "8xa100-pretrain", "--format", "json"])
    old = runner.invoke(app, ["offers", "--preset", "seed-8xa100", "--format", "json"])
    assert old.exit_code == new.exit_code == 0, old.output
    assert json.loads(old.stdout)["query"] == json.loads(new.stdout)["query"]
    assert json.loads(old.stdout)["offers"] == json.loads(new.stdout)["offers"]
    assert "note: --preset seed-8xa100 is deprecated; use --preset 8xa100-pretrain" in old.stderr
    assert "deprecated" not in new.stderr
    shown = runner.invoke(app, ["offers", "--help"], env={"COLUMNS": "400"}).stdout
    assert "8xa100-pretrain" in shown and "seed-" not in shown


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--min-gpus", "4", "--max-gpus", "2"], "error: --max-gpus: max_gpus (2"),
        (["--gpu", "NOPE-9000"], "error: --gpu: unknown GPU model"),  # as typed
        (["--min-gpus", "1.5"], "'--min-gpus'"),
        (["--preset", "nope"], "--preset"),
        (["--tokens", "1e9"], "error: --model-params:"),
        (["--term", "forever"], "error: --term:"),
        (["--countries", "USA"], "error: --countries:"),
        (["--job-gpus", "0"], "error: --job-gpus:"),
    ],
)
def test_offers_bad_options_exit_2(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["offers", *args])
    assert result.exit_code == 2
    assert needle in result.output + result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_estimate_llama2_7b_json() -> None:
    result = runner.invoke(
        app,
        [
            "estimate",
            "--gpu",
            "A100-SXM4-80GB",
            "--count",
            "64",
            "--params",
            "7e9",
            "--tokens",
            "2e12",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["sample"] is True and answer["mode"] == "model"
    data = answer["estimate"]
    assert data["gpu_hours"] == pytest.approx(LLAMA2_7B_GPU_HOURS, rel=0.25)
    assert data["memory_needed_gb"] == pytest.approx(112.0)
    assert data["offer"]["offer_id"] == "a100"
    assert data["offer"]["nodes"] == 8
    assert data["cost_usd"] > 0


def test_estimate_without_offer_gives_reason() -> None:
    result = runner.invoke(
        app,
        ["estimate", "--gpu", "B200", "--count", "8", "--params", "1e9", "--tokens", "1e10"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "no current offer of B200" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--gpu", "NOPE", "--count", "8", "--params", "1e9", "--tokens", "1e9"],
        ["--gpu", "B200", "--count", "0", "--params", "1e9", "--tokens", "1e9"],
        ["--gpu", "B200", "--count", "8", "--params", "-1", "--tokens", "1e9"],
    ],
)
def test_estimate_bad_options_exit_2(args: list[str]) -> None:
    result = runner.invoke(app, ["estimate", *args])
    assert result.exit_code == 2
    assert "Traceback" not in result.output + result.stderr


def test_table_names_the_seller_behind_a_provider() -> None:
    result = runner.invoke(
        app, ["offers", "--gpu", "A100", "--provider", "coreweave"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "coreweave (sheet)" in result.stdout
    assert "a100" in result.stdout and "acme" not in result.stdout


def test_sample_h100_query_lists_the_offers_whose_form_factor_is_not_stated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#13: H100s whose form factor (SXM or PCIe) is not stated (DigitalOcean's, JarvisLabs',
    and the catalog's Azure, RunPod and Vast types that name none) are ranked as the slower
    PCIe part, flagged in the JSON and in the table."""
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    result = runner.invoke(
        app, ["offers", "--sample", "--gpu", "H100", "--limit", "50", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = [flat_offer(o) for o in json.loads(result.stdout)["offers"]]
    unstated = {(r["provider"], r["gpu_model"]) for r in rows if not r["form_factor_stated"]}
    assert unstated == {
        (provider, "H100-PCIE-80GB")
        for provider in ("azure", "digitalocean", "jarvislabs", "runpod", "vastai")
    }
    for r in rows:
        assert r["form_factor_stated"] is (r["gpu_form_factor"] is not None)
    table = runner.invoke(app, ["offers", "--sample", "--gpu", "H100", "--limit", "50"])
    assert table.exit_code == 0, table.output
    said = "form factor not stated: ranked as the slower variant (H100-PCIE-80GB)"
    assert said in table.stdout  # on the row's #N line
    # and in the row itself: the GPUs cell marks the model as assumed, the mark explained
    cells = [line for line in table.stdout.splitlines() if "H100-PCIE-80GB?" in line]
    assert {p for p in ("digitalocean", "jarvislabs") if any(p in c for c in cells)} == {
        "digitalocean",
        "jarvislabs",
    }
    assert "?: the provider does not state the GPU's form factor" in table.stdout
    # the API row says it in its caveats, as the web explorer's row does
    for r in rows:
        said_in_row = said.split(" (")[0] in (r["caveats"] or "")
        assert said_in_row is (not r["form_factor_stated"]), r["provider"]


def test_sample_query_shows_fallback_figures_and_names_every_offer_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    result = runner.invoke(app, ["offers", "--sample", "--limit", "200", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [flat_offer(o) for o in json.loads(result.stdout)["offers"]]
    v100 = [r for r in rows if r["gpu_model"] == "V100-SXM2-32GB"]
    assert v100 and v100[0]["peak_basis"] == "fallback" and v100[0]["peak_precision"] == "fp16"
    assert v100[0]["peak_note"] == "ranked at FP16: no BF16 figure"
    # SkyPilot's bare "A100" (40 or 80 GB not said) and the sheet's unnamed gn7e GPU
    assert "4 offer(s) not ranked: 'A100' (azure, 2: GPU not identified)" in " ".join(
        result.stderr.split()
    )
    assert "'ecs.gn7e (GPU model not stated in the price file)'" in result.stderr


def test_estimate_table_reads_well_and_explains_both_wall_clocks() -> None:
    args = ["estimate", "--gpu", "A100-SXM4-80GB", "--count", "64"]
    result = runner.invoke(
        app, [*args, "--params", "7e9", "--tokens", "2e12"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "8.4e+22" in out and "83,999" not in out
    assert "total_flops / effective_tflops" in out
    assert "on this offer's nodes and term" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_estimate_counts_attention_flops_with_the_model_shape() -> None:
    """#12: 6N + 12 x layers x hidden x context FLOPs per token, on 12 GPUs (two nodes of
    8, 12 used): gpu_hours = wall clock x 12."""
    args = ["estimate", "--gpu", "H100-SXM5-80GB", "--count", "12", "--params", "7e9"]
    args += ["--tokens", "1e11", "--sample", "--format", "json"]
    shaped = runner.invoke(
        app, [*args, "--layers", "32", "--hidden-size", "4096", "--context-tokens", "4096"]
    )
    assert shaped.exit_code == 0, shaped.output
    est = json.loads(shaped.stdout)["estimate"]
    assert est["flops_per_token"] == pytest.approx(6 * 7e9 + 12 * 32 * 4096 * 4096)
    assert est["gpu_hours"] == pytest.approx(est["wall_clock_hours"] * 12)


def _estimate_json(*args: str) -> dict[str, object]:
    base = ["estimate", "--gpu-model", "A100-SXM4-80GB", "--job-gpus", "64"]
    result = runner.invoke(
        app, [*base, "--params", "7e9", "--tokens", "2e12", *args, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    estimate: dict[str, object] = json.loads(result.stdout)["estimate"]
    return estimate


def test_estimate_fabric_options_win_over_the_offers() -> None:
    """The a100 offer states 200 Gbps/GPU InfiniBand; --fabric and --fabric-gbps-per-gpu
    were ignored whenever an offer could run the job."""
    stated = _estimate_json()
    assert stated["basis"] == "offer" and stated["fabric"] == "infiniband"
    assert stated["fabric_gbps_per_gpu"] == 200 and stated["fabric_source"] == "offer"
    what_if = _estimate_json("--fabric", "roce", "--fabric-gbps-per-gpu", "1")
    assert what_if["basis"] == "offer" and what_if["scaling"] == 0.5
    assert (what_if["fabric"], what_if["fabric_gbps_per_gpu"]) == ("roce", 1)
    assert what_if["fabric_source"] == what_if["fabric_gbps_source"] == "user"
    assert what_if["wall_clock_hours"] > stated["wall_clock_hours"]  # type: ignore[operator]
    assert "roce at 1 Gbps per GPU (as given)" in str(what_if["topology"])


def test_estimate_ethernet_is_an_answer_not_a_false_peak_error() -> None:
    """The README's estimate plus --fabric ethernet answered "has no published peak at
    bf16"; on a GPU without offers too."""
    result = _estimate_json("--fabric", "ethernet")
    assert result["fabric"] == "ethernet" and result["fabric_source"] == "user"
    args = ["--params", "70e9", "--tokens", "2e12", "--fabric", "ethernet"]
    h200 = runner.invoke(
        app, ["estimate", "--gpu-model", "H200-SXM-141GB", "--job-gpus", "512", *args]
    )
    assert h200.exit_code == 0, h200.output
    assert "no published peak" not in h200.output


def test_estimate_names_the_option_that_is_wrong() -> None:
    from gpuscout.adapters.gpus import Precision, catalog

    spec, precision = next((s, p) for s in catalog() for p in Precision if s.figure(p) is None)
    args = ["--job-gpus", "8", "--params", "1e9", "--tokens", "1e9"]
    peak = runner.invoke(
        app, ["estimate", "--gpu-model", spec.name, "--precision", precision.value, *args]
    )
    assert peak.exit_code == 2
    assert f"error: --precision: {spec.name} has no published peak" in peak.stderr
    typo = runner.invoke(app, ["estimate", "--gpu-model", "H10O", *args])
    assert typo.exit_code == 2
    assert "error: --gpu-model: unknown GPU model 'H10O' (did you mean 'H100'?)" in typo.stderr


def test_offers_conflicting_job_names_every_input() -> None:
    result = runner.invoke(app, ["offers", "--hours", "10", "--params", "7e9", "--tokens", "1e12"])
    assert result.exit_code == 2
    assert "(got hours, params, tokens)" in result.stderr


def test_a_cut_ungrouped_table_counts_every_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--group-by none`` ranks only the limit: the count beneath is the ranking's total,
    the one the API's answer gives."""
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    query = ["offers", "--sample", "--min-gpu-memory-gb", "24", "--max-gpus", "1", "--hours", "168"]
    answer = runner.invoke(app, [*query, "--format", "json", "--limit", "3"])
    total = json.loads(answer.stdout)["total"]
    table = runner.invoke(
        app, [*query, "--group-by", "none", "--limit", "3"], env={"COLUMNS": "200"}
    )
    assert table.exit_code == 0, table.output
    assert f"3 of {total} configurations shown; --limit {total} to see all" in table.stdout
    folded = runner.invoke(app, [*query, "--columns", "rank,usd_per_hour"], env={"COLUMNS": "200"})
    assert folded.exit_code == 0, folded.output
    assert re.search(r"20 of \d+ rows shown \(\d+ configurations, regions folded\)", folded.stdout)


def test_a_model_too_large_for_the_gpus_hears_the_figures_and_what_would_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 70B fine-tune on one 8x H100 node: 1120 GB of state over 8 GPUs is 140 GB each,
    plus ~9.5 GB of activations and floor, on 80 GB GPUs. The CLI names its options, the
    API's note its fields; each remedy ranks offers when taken."""
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    query = ["offers", "--sample", "--gpus", "H100", "--min-gpus", "8"]
    query += ["--params", "70e9", "--tokens", "1e9"]
    query += ["--providers", "aws,lambda,sheet,vultr"]  # their H100s are all 80 GB parts
    result = runner.invoke(app, query, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    note = " ".join(result.stderr.split())
    assert (
        "training state does not fit in one GPU's memory: 6 (aws, lambda, sheet, vultr),"
        " 150 GB per GPU needed on 8 GPUs of 80 GB: it fits on 16 of those GPUs"
        " (--job-gpus 16), or on 8 at 8 bytes per parameter or less (--bytes-per-param 8,"
        " e.g. LoRA: about 2 for frozen bf16 weights)" in note
    )
    answer = json.loads(runner.invoke(app, [*query, "--format", "json"]).stdout)
    [warning] = [w for w in answer["warnings"] if "does not fit" in w]
    assert "(job_gpus 16)" in warning and "(bytes_per_param 8," in warning
    assert "--job-gpus" not in warning
    for remedy in (["--job-gpus", "16"], ["--bytes-per-param", "8"]):
        fits = runner.invoke(app, [*query, *remedy, "--format", "json"])
        assert json.loads(fits.stdout)["offers"], remedy
    too_much = runner.invoke(app, [*query, "--bytes-per-param", "8.5", "--format", "json"])
    assert not json.loads(too_much.stdout)["offers"]


@pytest.mark.parametrize("option", ["--provider", "--providers", "--exclude-provider"])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_an_unknown_provider_is_refused_with_a_did_you_mean(option: str, fmt: str) -> None:
    result = runner.invoke(app, ["offers", option, "lamda", "--format", fmt])
    assert result.exit_code == 2, result.output
    field = "--exclude-providers" if "exclude" in option else "--providers"
    said = " ".join(result.stderr.split())  # the console may wrap
    assert f"error: {field}: unknown provider 'lamda' (did you mean 'lambda'?); known:" in said
    assert "acme" in said and "coreweave" in said and "runpod" in said  # data's and adapters'
    assert result.stdout == "" and "Traceback" not in said


@pytest.mark.parametrize("name", ["acme", "coreweave", "runpod"])
def test_a_provider_of_the_data_or_an_adapter_is_accepted(name: str) -> None:
    result = runner.invoke(app, ["offers", "--provider", name, "--format", "json"])
    assert result.exit_code == 0, result.output


def test_a_provider_in_another_case_is_the_known_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    lower = runner.invoke(app, ["offers", "--sample", "--provider", "lambda", "--format", "json"])
    upper = runner.invoke(app, ["offers", "--sample", "--provider", "Lambda", "--format", "json"])
    assert lower.exit_code == upper.exit_code == 0, upper.output
    offers = json.loads(upper.stdout)["offers"]
    assert offers and {o["provider"] for o in offers} == {"lambda"}
    assert [o["id"] for o in offers] == [o["id"] for o in json.loads(lower.stdout)["offers"]]


def test_on_the_sample_lamda_is_refused_and_a_sheet_seller_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pricing_cli, "load_current", load_current)
    result = runner.invoke(app, ["offers", "--sample", "--provider", "lamda"])
    assert result.exit_code == 2
    assert "(did you mean 'lambda'?)" in " ".join(result.stderr.split())
    sellers = load_current(sample=True).frame["seller"].drop_nulls().unique().to_list()
    result = runner.invoke(app, ["offers", "--sample", "--provider", sellers[0]])
    assert result.exit_code == 0, result.output


def test_nothing_qualifying_without_a_note_does_not_point_at_one() -> None:
    result = runner.invoke(
        app, ["offers", "--exclude-providers", "acme,sheet"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "no offer meets the requirement and can run the job" in result.stderr
    assert "see the note" not in result.stderr


def test_nothing_qualifying_with_a_note_points_at_it() -> None:
    result = runner.invoke(
        app, ["offers", "--model-params", "1e13", "--tokens", "1e12"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    said = result.stderr
    assert "no offer meets the requirement and can run the job (see the note)" in said
    assert said.index("(see the note)") < said.index("note: ", said.index("(see the note)"))


@pytest.mark.parametrize("name", ["H100 SXM", "H100-SXM", "h100 sxm5"])
def test_offers_take_a_gpu_name_as_providers_write_it(name: str) -> None:
    result = runner.invoke(app, ["offers", "--gpu", name, "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["gpu_model"] for r in rows} == {"H100-SXM5-80GB"}


def test_offers_gpu_names_resolve_to_every_model_they_may_mean() -> None:
    result = runner.invoke(
        app, ["offers", "--gpu", "A100-80GB", "--gpu", "4090", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["gpu_model"] for r in rows} == {"A100-SXM4-80GB", "RTX-4090"}


def test_an_unknown_gpu_name_gets_a_did_you_mean() -> None:
    result = runner.invoke(app, ["offers", "--gpu", "H1000"])
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "error: --gpu: unknown GPU model, family or vendor: 'H1000' (did you mean 'H100'" in said


def test_estimate_refuses_a_family_naming_its_models() -> None:
    args = ["--job-gpus", "8", "--model-params", "1e9", "--tokens", "1e10"]
    result = runner.invoke(app, ["estimate", "--gpu-model", "H100", *args])
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "error: --gpu-model: 'H100' is a family: one of H100-SXM5-80GB, H100-PCIE-80GB" in said


def test_estimate_takes_a_name_meaning_one_model() -> None:
    args = ["--job-gpus", "8", "--model-params", "1e9", "--tokens", "1e10", "--format", "json"]
    result = runner.invoke(app, ["estimate", "--gpu-model", "H100 SXM", *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["estimate"]["gpu_model"] == "H100-SXM5-80GB"


@pytest.mark.parametrize(
    ("args", "published_gpu_hours"),
    [
        # DeepSeek-V3 technical report (arXiv:2412.19437): 2.788M H800 GPU-hours, FP8
        (["--gpu-model", "H800-SXM5-80GB", "--job-gpus", "2048", "--model-params", "671e9",
          "--active-params", "37e9", "--tokens", "14.8e12", "--precision", "fp8",
          "--layers", "61", "--hidden-size", "7168", "--context-tokens", "4096"], 2.788e6),
        # Llama 3.1 model card: 8B 1.46M and 70B 7.0M H100-80GB GPU-hours
        (["--gpu-model", "H100-SXM5-80GB", "--job-gpus", "8192", "--model-params", "8.03e9",
          "--tokens", "15.6e12", "--layers", "32", "--hidden-size", "4096",
          "--context-tokens", "8192"], 1.46e6),
        (["--gpu-model", "H100-SXM5-80GB", "--job-gpus", "8192", "--model-params", "70.6e9",
          "--tokens", "15.6e12", "--layers", "80", "--hidden-size", "8192",
          "--context-tokens", "8192"], 7.0e6),
    ],
    ids=["deepseek-v3", "llama-3.1-8b", "llama-3.1-70b"],
)  # fmt: skip
def test_estimate_lands_within_25_percent_of_published_runs(
    args: list[str], published_gpu_hours: float
) -> None:
    result = runner.invoke(app, ["estimate", *args, "--sample", "--format", "json"])
    assert result.exit_code == 0, result.output
    est = json.loads(result.stdout)["estimate"]
    assert est["gpu_hours"] == pytest.approx(published_gpu_hours, rel=0.25)
    assert est["factor_sources"]["mfu"] and est["factor_sources"]["flops"]
