"""One vocabulary: every parameter of ``GET /v1/offers`` is an option of ``gpuscout offers``
under the same name (or a documented alias), with the same help text, and back."""

from __future__ import annotations

from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from gpuscout.service.api.offers_query import JOB_PARAMS, OffersQuery
from gpuscout.service.cli import app
from gpuscout.service.commands import offer_options
from gpuscout.service.commands.offer_options import ALIASES, option_name

#: Options of ``offers`` that are the CLI's own (no API parameter): where the data comes
#: from, the output form and the table's layout.
CLI_ONLY = {"sample", "fmt", "group_by", "wide", "columns"}
#: API parameters with no CLI option: paging is for HTTP clients, the CLI prints one answer
#: of ``--limit`` offers.
API_ONLY = {"cursor"}


def offers_params() -> dict[str, Any]:
    root: Any = get_command(app)
    command = root.get_command(root.context_class(root), "offers")
    assert command is not None
    return {p.name: p for p in command.params if p.name}


def test_every_api_parameter_is_a_cli_option_of_the_same_name() -> None:
    params = offers_params()
    for name in set(OffersQuery.model_fields) - API_ONLY:
        assert name in params, f"API parameter {name} has no CLI option"
        assert option_name(name) in params[name].opts, (name, params[name].opts)


def test_every_cli_option_is_an_api_parameter_or_the_clis_own() -> None:
    params = offers_params()
    assert set(params) - set(OffersQuery.model_fields) == CLI_ONLY


def test_other_spellings_are_documented_aliases() -> None:
    for name, param in offers_params().items():
        primary = option_name("format" if name == "fmt" else name)
        others = set(param.opts) - {primary}
        assert others == set(ALIASES.get(name, ())), (name, param.opts)
    assert set(ALIASES) <= set(OffersQuery.model_fields)


def test_help_text_is_the_apis_description() -> None:
    params = offers_params()
    for name, info in OffersQuery.model_fields.items():
        if name in API_ONLY:
            continue
        help_text = getattr(params[name], "help", None) or ""
        assert help_text, f"--{name} has no help"
        if info.description:
            assert help_text.startswith(info.description), (name, help_text)


def test_the_job_gpu_count_is_named_as_in_the_api() -> None:
    assert offer_options.JOB_NAMES.items() <= {k: v for k, v in JOB_PARAMS.items()}.items()


def test_min_gpus_is_an_integer() -> None:
    refused = CliRunner().invoke(app, ["offers", "--sample", "--min-gpus", "1.5"])
    assert refused.exit_code == 2 and "'--min-gpus'" in refused.output
    taken = CliRunner().invoke(app, ["offers", "--sample", "--min-gpus", "8", "--limit", "1"])
    assert taken.exit_code == 0, taken.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--gpus", "NOPE-9000"], "error: --gpus: unknown GPU model"),
        (["--gpu", "NOPE-9000"], "error: --gpu: unknown GPU model"),  # named as typed
        (["--gpu", "H100", "--gpus=NOPE-9000"], "error: --gpus: unknown GPU model"),
        (["--providers", "a", "--exclude-providers", "a"], "error: --exclude-providers:"),
        (["--max-usd-per-gpu-hour", "0"], "error: --max-usd-per-gpu-hour:"),
        (["--interruptible-overhead", "11"], "error: --interruptible-overhead:"),
        (["--columns", "rank,nope"], "error: --columns: unknown nope; known: rank,"),
    ],
)
def test_errors_name_the_cli_option(args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["offers", "--sample", *args])
    assert result.exit_code == 2
    assert said in result.stderr, result.stderr


def test_list_options_repeat_or_take_commas() -> None:
    runner = CliRunner()
    one = runner.invoke(app, ["offers", "--sample", "--format", "json", "--gpus", "H100,A100"])
    two = runner.invoke(
        app, ["offers", "--sample", "--format", "json", "--gpu", "H100", "--gpus", "A100"]
    )
    assert one.exit_code == two.exit_code == 0, one.output + two.output
    assert '"gpus": [\n   "A100",\n   "H100"\n  ]' in one.stdout
    # the same offers; their price age is read off the clock at each run (3.6 s steps)
    assert _without_age(one.stdout) == _without_age(two.stdout)


def _without_age(stdout: str) -> list[dict[str, object]]:
    import json

    offers: list[dict[str, object]] = json.loads(stdout)["offers"]
    return [{k: v for k, v in o.items() if k != "price_age_hours"} for o in offers]


def test_sort_orders_the_answer() -> None:
    import json

    result = CliRunner().invoke(
        app, ["offers", "--sample", "--format", "json", "--sort", "usd_per_hour", "--limit", "5"]
    )
    assert result.exit_code == 0, result.output
    prices = [o["price"]["usd_per_hour"] for o in json.loads(result.stdout)["offers"]]
    assert prices == sorted(prices)


def test_notes_name_cli_options_not_api_fields() -> None:
    """The CLI's "closest offers miss only ..." note names the options the user typed."""
    result = CliRunner().invoke(
        app, ["offers", "--sample", "--gpus", "H100", "--min-gpus", "16"], env={"COLUMNS": "400"}
    )
    assert "miss only --min-gpus" in result.stderr, result.stderr
    assert "min_gpus" not in result.stderr


def test_caveats_name_no_surface_s_spelling() -> None:
    """Caveats travel to the API, the CLI and the pages alike: they name no parameter."""
    from gpuscout.adapters.schema import RentalTerm, default_fx
    from gpuscout.pricing import Requirement, rank
    from gpuscout.pricing import expressions as ex
    from gpuscout.service.current import load_sample

    assert "allow_ethernet" not in ex.ETHERNET_ONLY
    frame = load_sample(default_fx()).frame
    ranked = rank(frame, Requirement(terms=(RentalTerm.INTERRUPTIBLE,)))
    risk = ranked["interruptible_risk"][0]
    assert "exclude interruptible terms to rank without" in risk
    assert "exclude_interruptible" not in risk
