"""FX: the ECB daily rates become the table prices convert with; a broken file or download
is a clear error that leaves the previous table in place."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from gpuscout.adapters.schema import Offer, default_fx, fx_context, load_fx
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.service import cli
from gpuscout.service import settings as settings_module
from gpuscout.service.cli import app
from gpuscout.service.current import load_current
from gpuscout.service.fx import (
    ECB_DAILY_URL,
    FxError,
    ecb_toml,
    fx_table,
    run_fx_job,
    update_fx_file,
)
from gpuscout.service.settings import Settings
from tests.pricing.factories import make_offer

ECB = Path(__file__).parents[1] / "fixtures" / "fx" / "eurofxref-daily.2026-07-09.verbatim.xml"
runner = CliRunner()


@pytest.fixture(autouse=True)
def fresh_settings_afterwards() -> Iterator[None]:
    yield
    settings_module.get_settings.cache_clear()


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, **kw)  # type: ignore[call-arg, arg-type]


def test_ecb_daily_xml_becomes_an_fx_table() -> None:
    table = load_fx(ecb_toml(ECB.read_text()))
    assert table.as_of == "2026-07-09"
    assert "ECB" in table.source
    # 185.72 JPY and 1.1435 USD per EUR: 162.41... JPY per USD
    assert table.units_per_usd["JPY"] == Decimal("185.72") / Decimal("1.1435")
    assert table.units_per_usd["EUR"] == 1 / Decimal("1.1435")
    assert set(table.units_per_usd) == {"EUR", "USD", "JPY", "CZK", "GBP", "CHF"}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("not xml at all", "not XML"),
        ("<Envelope/>", "no <Cube time"),
        (ECB.read_text().replace("rate='1.1435'", "rate='n/a'"), "bad rate 'n/a' for USD"),
        (ECB.read_text().replace("currency='USD' rate='1.1435'/>", "currency='XXX' rate='1'/>"),
         "lacks 'USD'"),
    ],
)  # fmt: skip
def test_a_bad_answer_is_an_error_naming_why(xml: str, message: str) -> None:
    with pytest.raises(FxError, match=message):
        ecb_toml(xml)


@respx.mock
def test_update_writes_the_file_and_a_failure_keeps_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "fx.toml"
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
    with httpx.Client() as client:
        assert update_fx_file(path, client).as_of == "2026-07-09"
    before = path.read_text()
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(503))
    with httpx.Client() as client, pytest.raises(FxError, match="503"):
        update_fx_file(path, client)
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text="<html>"))
    with httpx.Client() as client, pytest.raises(FxError, match="not XML"):
        update_fx_file(path, client)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["fx.toml"]  # no temporary left behind


def test_the_settings_table_converts_prices(tmp_path: Path) -> None:
    offer = make_offer(price_amount=Decimal("100"), price_currency="GBP", gpu_count=1)
    shipped = offer.usd_per_hour
    assert fx_table(_settings(tmp_path)) is default_fx()  # nothing written yet
    (tmp_path / "fx_rates.toml").write_text(ecb_toml(ECB.read_text()))
    table = fx_table(_settings(tmp_path))  # data_dir/fx_rates.toml is picked up
    assert table.as_of == "2026-07-09"
    # 100 GBP at 0.85363 GBP and 1.1435 USD per EUR
    expected = (Decimal(100) / (Decimal("0.85363") / Decimal("1.1435"))).quantize(
        Decimal("0.000001")
    )
    fields = offer.model_dump(exclude={"usd_per_hour"})
    converted = Offer.model_validate(fields, context=fx_context(table))
    assert converted.usd_per_hour == expected != shipped
    assert offer.with_fx(table).usd_per_hour == expected
    assert offer.usd_per_hour == shipped  # reading settings changed nothing in the process
    assert offers_to_frame([offer], table)["usd_per_hour"][0] == float(expected)
    assert offers_to_frame([offer])["usd_per_hour"][0] == float(shipped)


def test_the_current_state_names_its_fx_table(tmp_path: Path) -> None:
    shipped = (Path(__file__).parents[2] / "adapters" / "fx_rates.toml").read_text()
    newer = shipped.replace('as_of = "2025-02-28"', 'as_of = "2026-07-10"')
    (tmp_path / "fx_rates.toml").write_text(newer)
    current = load_current(sample=True, settings=_settings(tmp_path))
    assert current.fx.as_of == "2026-07-10"  # the state names the table it was priced with
    (tmp_path / "fx_rates.toml").write_text(ecb_toml(ECB.read_text()))  # no CNY in it
    with pytest.raises(ValueError, match="FX table of 2026-07-09 .* no rate for CNY"):
        load_current(sample=True, settings=_settings(tmp_path))


def test_reading_settings_applies_no_fx_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fx_rates.toml").write_text(ecb_toml(ECB.read_text()))
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    settings_module.get_settings.cache_clear()
    settings_module.get_settings()
    offer = make_offer(price_amount=Decimal("100"), price_currency="GBP", gpu_count=1)
    assert offer.usd_per_hour == offer.with_fx(default_fx()).usd_per_hour


def test_a_missing_or_broken_named_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FxError, match="missing.toml"):
        fx_table(_settings(tmp_path, fx_rates_file=tmp_path / "missing.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text('as_of = "x"\n[per_base]\nEUR = 1\n')
    with pytest.raises(FxError, match="broken.toml: FX file lacks"):
        fx_table(_settings(tmp_path, fx_rates_file=broken))


@respx.mock
def test_cli_update_then_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
    settings_module.get_settings.cache_clear()
    result = runner.invoke(app, ["fx", "update"])
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / 'fx_rates.toml'}: ECB rates as of 2026-07-09" in result.stdout
    settings_module.get_settings.cache_clear()
    shown = runner.invoke(app, ["fx", "show"])
    assert shown.exit_code == 0, shown.output
    assert "as of 2026-07-09" in shown.stdout and "1 USD = 0.8745 EUR" in shown.stdout


def test_broken_configuration_is_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["gpuscout", "offers", "--sample"])
    monkeypatch.setenv("GPUSCOUT_HTTP_RETRIES", "many")
    settings_module.get_settings.cache_clear()
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: configuration: GPUSCOUT_HTTP_RETRIES: Input should be")
    assert "Traceback" not in err


@respx.mock
def test_scheduled_job_updates_and_applies_and_survives_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path)
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
    table = run_fx_job(settings)
    assert table is not None and table.as_of == "2026-07-09"
    assert fx_table(settings).as_of == "2026-07-09"  # the next load or snapshot uses it
    assert (tmp_path / "fx_rates.toml").is_file()
    respx.get(ECB_DAILY_URL).mock(side_effect=httpx.ConnectError("no route"))
    with caplog.at_level("WARNING", logger="gpuscout.fx"):
        assert run_fx_job(settings) is None
    assert "FX rates not updated" in caplog.text and "no route" in caplog.text
    assert fx_table(settings).as_of == "2026-07-09"  # the last good table stays


def test_scheduler_runs_the_fx_job_unless_disabled(tmp_path: Path) -> None:
    from gpuscout.service.scheduler import FX_JOB_ID, build_scheduler

    scheduler = build_scheduler(
        _settings(tmp_path, fx_update_hours=12), job=lambda: None, digests=False
    )
    job = scheduler.get_job(FX_JOB_ID)
    assert job is not None and job.trigger.interval.total_seconds() == 12 * 3600
    assert job.coalesce is True and job.max_instances == 1
    off = build_scheduler(_settings(tmp_path, fx_update_hours=0), job=lambda: None, digests=False)
    assert off.get_job(FX_JOB_ID) is None


@respx.mock
def test_cli_update_writes_a_named_file_that_does_not_exist_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "shared" / "fx.toml"
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPUSCOUT_FX_RATES_FILE", str(target))
    respx.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
    settings_module.get_settings.cache_clear()
    result = runner.invoke(app, ["fx", "update"])
    assert result.exit_code == 0, result.output
    assert target.is_file() and f"wrote {target}" in result.stdout
