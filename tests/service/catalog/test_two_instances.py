"""Two gpuscout processes on 127.0.0.1: a collector that snapshots the sample and
publishes, and a follower with no provider configured that follows it over HTTP and
answers ``/v1/offers`` with the same rows, in the same order, at the same prices; a
tampered file, a tampered manifest or one signed by another key leaves the follower on
its last-good offers, the error named in ``/v1/providers``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gpuscout.service.catalog.follow import follow_catalog
from gpuscout.service.catalog.manifest import canonical
from gpuscout.service.catalog.signing import generate_key, key_id, sign
from gpuscout.service.settings import Settings
from tests.service.serve_process import CLI, ServeProcess

from .conftest import PROVIDERS

#: Every field of an offer's row but its price's age, which is counted from the request.
_REQUEST_TIME_FIELDS = {"price_age_hours", "price_age_s"}


def _env(data_dir: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSCOUT_")}
    env.update(
        GPUSCOUT_DATA_DIR=str(data_dir),
        GPUSCOUT_FX_UPDATE_HOURS="0",  # no network
        GPUSCOUT_SNAPSHOT_JITTER_S="0",
        GPUSCOUT_API_REFRESH_S="0.2",
        **{f"GPUSCOUT_{k.upper()}": v for k, v in values.items()},
    )
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True, timeout=120
    )


class Instance(ServeProcess):
    """One ``gpuscout serve`` process in its own process group, killed whole at the end."""

    def wait_until(self, check: Any, what: str, timeout_s: float = 90) -> Any:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise AssertionError(f"gpuscout serve exited: {self.process.stderr.read()!r}")  # type: ignore[union-attr]
            try:
                found = check()
            except httpx.HTTPError:
                found = None
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def instances() -> Iterator[list[Instance]]:
    started: list[Instance] = []
    yield started
    for instance in started:
        instance.stop()


def _rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k not in _REQUEST_TIME_FIELDS} for row in answer["offers"]
    ]


def _providers(instance: Instance) -> dict[str, dict[str, Any]]:
    return {p["provider"]: p for p in instance.get("/v1/providers").json()["providers"]}


def _held(instance: Instance) -> bool:
    """The instance answers from its database (not the offline sample it shows before its
    first snapshot) and holds offers of every provider."""
    if instance.get("/readyz").status_code != 200:
        return False
    answer = instance.get("/v1/providers").json()
    providers = {p["provider"]: p for p in answer["providers"]}
    held = all(providers.get(p, {}).get("offer_count") for p in PROVIDERS)
    return answer["source"] == "database" and held


def test_a_follower_answers_as_its_collector_and_keeps_last_good_offers(
    tmp_path: Path, instances: list[Instance]
) -> None:
    catalog = tmp_path / "catalog"
    leader_env = _env(tmp_path / "leader", publish_dir=str(catalog))
    providers = [a for p in PROVIDERS for a in ("-p", p)]
    assert _cli(leader_env, "snapshot", "--sample", *providers).returncode == 0
    generate_key(tmp_path / "key.pem")
    published = _cli(leader_env, "publish", "--key", str(tmp_path / "key.pem"))
    assert published.returncode == 0 and "published" in published.stdout, published.stderr
    leader = Instance(leader_env, "--no-scheduler")
    instances.append(leader)
    leader.wait_until(lambda: leader.get("/readyz").status_code == 200, "the collector")

    follower_env = _env(
        tmp_path / "follower",
        catalog_url=f"{leader.url}/v1/catalog/",
        catalog_public_key=str(tmp_path / "key.pem.pub"),
    )
    follower = Instance(follower_env)  # its scheduler follows the catalog at start
    instances.append(follower)
    follower.wait_until(lambda: _held(follower), "the follower to hold the catalog's offers")

    query = "/v1/offers?limit=200&sort=usd_per_gpu_hour"
    ours, theirs = leader.get(query).json(), follower.get(query).json()
    assert ours["total"] == theirs["total"] > 0
    assert _rows(ours) == _rows(theirs)  # same rows, same order, same prices
    assert [r["price"] for r in ours["offers"]] == [r["price"] for r in theirs["offers"]]
    follower_providers = _providers(follower)
    assert all(follower_providers[p]["credentials"] != "set" for p in PROVIDERS)

    # the catalog is served as cacheable static files, revalidated by ETag
    manifest = leader.get("/v1/catalog/manifest.json")
    assert manifest.status_code == 200 and manifest.headers["ETag"]
    assert "max-age" in manifest.headers["Cache-Control"]
    again = leader.get(
        "/v1/catalog/manifest.json", headers={"If-None-Match": manifest.headers["ETag"]}
    )
    assert again.status_code == 304
    entry = manifest.json()["signed"]["providers"][0]
    file = leader.get(f"/v1/catalog/{entry['file']}")
    assert file.status_code == 200 and "immutable" in file.headers["Cache-Control"]

    before = _rows(follower.get(query).json())
    # the follower's own store, polled here in-process rather than by another process
    follower_settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "follower",
        catalog_url=f"{leader.url}/v1/catalog/",
        catalog_public_key=str(tmp_path / "key.pem.pub"),
    )

    # one byte of one published file changed: that provider keeps its last-good offers
    republished = _cli(leader_env, "publish", "--key", str(tmp_path / "key.pem"))
    assert republished.returncode == 0, republished.stderr
    signed = json.loads((catalog / "manifest.json").read_bytes())["signed"]
    aws = next(p for p in signed["providers"] if p["provider"] == "aws")
    data = bytearray((catalog / aws["file"]).read_bytes())
    data[100] ^= 0xFF
    (catalog / aws["file"]).write_bytes(bytes(data))
    followed = follow_catalog(follower_settings)
    assert followed.error is not None and "SHA-256 does not match" in followed.error
    named = follower.wait_until(
        lambda: (p := _providers(follower)["aws"])["error"] and p, "the named error"
    )
    assert named["outcome"] == "stale" and "aws.parquet" in named["error"]
    assert _rows(follower.get(query).json()) == before

    # the manifest changed by one byte, then signed by another key: every provider stays
    text = (catalog / "manifest.json").read_text()
    (catalog / "manifest.json").write_text(text.replace('"rows": ', '"rows": 1', 1))
    followed = follow_catalog(follower_settings)
    assert followed.error is not None and "signature does not verify" in followed.error
    outer = json.loads((catalog / "manifest.json").read_bytes().replace(b'"rows": 1', b'"rows": '))
    other = Ed25519PrivateKey.generate()
    outer["signature"] = {
        "key_id": key_id(other.public_key()),
        "ed25519": sign(other, canonical(outer["signed"])),
    }
    (catalog / "manifest.json").write_text(json.dumps(outer))
    followed = follow_catalog(follower_settings)
    assert followed.error is not None and key_id(other.public_key()) in followed.error
    follower.wait_until(
        lambda: all(
            "signature does not verify" in (p["error"] or "")
            for name, p in _providers(follower).items()
            if name in PROVIDERS
        ),
        "every provider named",
    )
    assert _rows(follower.get(query).json()) == before
