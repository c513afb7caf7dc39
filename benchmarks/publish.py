"""Benchmark: publish a catalog of N synthetic offers and follow it; print the times and
the catalog's size.

    uv run python benchmarks/publish.py [--offers 100000]

A collector stores the offers (not timed), then ``publish_catalog`` writes the signed
catalog (timed: reading and decoding the stored offers, Parquet encoding, hashing,
signing, the atomic write); a follower with an empty database reads it by local path
(timed: manifest and signature, every file's hash, Parquet decoding and validation of every
offer, storing the snapshot). A second poll of the unchanged catalog is timed too. The
process's CPU time is printed beside each wall time: on a shared machine the wall time
follows the load, the CPU time much less.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.synthetic import synthetic_offers
from gpuscout.adapters.run import ProviderRun, RunStatus
from gpuscout.service.catalog.follow import follow_catalog
from gpuscout.service.catalog.publish import publish_catalog
from gpuscout.service.catalog.signing import generate_key
from gpuscout.service.settings import Settings
from gpuscout.service.snapshots import take_snapshot


def _settings(data_dir: Path, **values: object) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, **values)  # type: ignore[call-arg]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000)
    args = parser.parse_args()
    now = datetime.now(UTC)
    offers = synthetic_offers(args.offers, now=now)
    by_provider: dict[str, list] = {}  # type: ignore[type-arg]
    for offer in offers:
        by_provider.setdefault(offer.provider, []).append(offer)
    runs = [ProviderRun(p, RunStatus.OK, now, 0.0, offers=o) for p, o in by_provider.items()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        collector = _settings(root / "collector")
        take_snapshot(collector, fetch=lambda: runs)
        key, public = generate_key(root / "key.pem")

        began, cpu = time.perf_counter(), time.process_time()
        result = publish_catalog(collector, root / "catalog", key_file=key)
        publish_s, publish_cpu = time.perf_counter() - began, time.process_time() - cpu

        follower = _settings(
            root / "follower", catalog_url=str(root / "catalog"), catalog_public_key=str(public)
        )
        began, cpu = time.perf_counter(), time.process_time()
        followed = follow_catalog(follower)
        follow_s, follow_cpu = time.perf_counter() - began, time.process_time() - cpu
        began = time.perf_counter()
        again = follow_catalog(follower)
        unchanged_s = time.perf_counter() - began

    assert followed.error is None and followed.offer_count == len(offers), followed.error
    assert again.unchanged
    mb = result.total_bytes / 1e6
    print(f"offers: {len(offers)} of {len(by_provider)} providers")
    print(f"catalog: {mb:.2f} MB of Parquet (zstd), {mb * 1e6 / len(offers):.0f} bytes/offer")
    print(f"publish: {publish_s:.2f} s ({publish_cpu:.2f} s CPU)")
    print(f"follow: {follow_s:.2f} s ({follow_cpu:.2f} s CPU; verify, decode, validate, store)")
    print(f"follow unchanged: {unchanged_s:.3f} s (one conditional read)")


if __name__ == "__main__":
    main()
