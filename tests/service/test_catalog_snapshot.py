"""`gpuscout snapshot` with no credentials, the published catalogs replayed by a local
server at their real URL paths (the base URLs are settings): every offer stored names its
real provider and the catalog it came through."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import zipfile
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from gpuscout.service.cli import app
from gpuscout.service.fx import ECB_DAILY_URL
from gpuscout.service.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "tests" / "fixtures" / "catalogs"
ECB = ROOT / "tests/fixtures/fx/eurofxref-daily.2026-07-09.verbatim.xml"
#: The path of SkyPilot's hosted catalog under raw.githubusercontent.com, and of gpuhunt's
#: under its bucket's host (skypilot_catalog.API_BASE, gpuhunt_catalog.API_BASE).
SKYPILOT_PATH = "skypilot-org/skypilot-catalog/master/catalogs/v8"
GPUHUNT_PATH = "v3"


def published_tree(root: Path) -> None:
    """The recorded catalogs laid out as they are published."""
    shutil.copytree(CATALOGS / "skypilot" / "v8", root / SKYPILOT_PATH)
    lambdalabs = CATALOGS / "gpuhunt" / "v3" / "lambdalabs"
    version = (lambdalabs / "version").read_text().strip()
    target = root / GPUHUNT_PATH / "lambdalabs"
    (target / version).mkdir(parents=True)
    (target / "version").write_text(version + "\n")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(lambdalabs / "lambdalabs.csv", "lambdalabs.csv")
    (target / version / "catalog.zip").write_bytes(buffer.getvalue())


def test_snapshot_without_accounts_stores_catalog_offers_of_their_real_providers(
    catalog_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.chdir(tmp_path)
    for name in ("GPUSCOUT_DATABASE_URL", "GPUSCOUT_ENVIRONMENT", "GPUSCOUT_FX_RATES_FILE"):
        monkeypatch.delenv(name, raising=False)
    env = {
        "COLUMNS": "200",  # the run table whole, whatever the terminal running the tests
        "GPUSCOUT_DATA_DIR": str(data),
        "GPUSCOUT_SKYPILOT_CATALOG_BASE_URL": f"{catalog_server}/{SKYPILOT_PATH}",
        "GPUSCOUT_GPUHUNT_CATALOG_BASE_URL": f"{catalog_server}/{GPUHUNT_PATH}",
    }
    get_settings.cache_clear()
    with respx.mock(assert_all_called=False) as mock:
        mock.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
        mock.route(host="127.0.0.1").pass_through()
        result = CliRunner().invoke(
            app, ["snapshot", "-p", "skypilot_catalog", "-p", "gpuhunt_catalog"], env=env
        )
        ranked = CliRunner().invoke(app, ["offers", "--gpu", "H100", "--hours", "100"], env=env)
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert ranked.exit_code == 0, ranked.output
    # the answer ranks the stored catalog offers and says where they came from
    assert "from published catalogs:" in ranked.output
    assert "offline sample" not in ranked.output
    assert "via skypilot_catalog" in result.output  # the run table names each source

    with sqlite3.connect(data / "gpuscout.db") as db:
        rows = db.execute("SELECT provider, record FROM current_offer").fetchall()
        origins = dict(db.execute("SELECT provider, offers_origin FROM provider_status"))
    records = [(provider, json.loads(record)) for provider, record in rows]
    providers = {provider for provider, _ in records}
    assert providers == {
        "hyperbolic", "hyperstack", "jarvislabs", "lambda", "lium", "mithril", "nebius", "oci",
        "primeintellect", "runpod", "seeweb", "shadeform", "vastai", "verda",
    }  # fmt: skip
    # each offer labelled with its source: the catalog, its version and licence
    labels = {(r["via_catalog"], r["catalog_licence"]) for _, r in records}
    assert labels == {("skypilot-catalog v8", "NOASSERTION"), ("gpuhunt v3", "MPL-2.0")}
    assert all(r.get("catalog_version") for _, r in records if r["via_catalog"] == "gpuhunt v3")
    # Lambda: both catalogs list gpu_1x_a6000 in us-east-1; one offer, gpuhunt's (first)
    a6000 = [r for p, r in records if p == "lambda" and r["offer_id"] == "gpu_1x_a6000"]
    assert [(r["via_catalog"], r["price_amount"]) for r in a6000] == [("gpuhunt v3", "0.8")]
    assert {origins[p] for p in providers} == {"catalog"}
    assert "catalog" not in origins.get("skypilot_catalog", "live")
