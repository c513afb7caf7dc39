"""Benchmark: ``gpuscout snapshot`` with no network, as a user runs it; print its time.

    uv run python benchmarks/snapshot_no_network.py [--repeat 3]

Every provider's base URL points at a closed port on 127.0.0.1 (each connection refused, as
a machine without network refuses or fails to resolve every name), no credential is set, and
each run gets a fresh data dir. The product states <= 5 s for this case: every provider fails
at its first attempt, all at once. Wall time follows the machine's load; the CPU time of the
process is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def offline_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSCOUT_")}
    refused = f"http://127.0.0.1:{closed_port()}"
    manifest = json.loads((ROOT / "adapters" / "data" / "providers.json").read_text("utf-8"))
    for provider in manifest["providers"]:
        if provider["base_url"]:
            env[f"GPUSCOUT_{provider['name'].upper()}_BASE_URL"] = refused
    env["GPUSCOUT_DATA_DIR"] = str(data_dir)
    env["GPUSCOUT_DATABASE_URL"] = f"sqlite:///{data_dir / 'gpuscout.db'}"
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    walls: list[float] = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                [str(Path(sys.executable).with_name("gpuscout")), "snapshot"],
                env=offline_env(Path(tmp)),
                capture_output=True,
                text=True,
                check=False,
            )
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        walls.append(wall)
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        print(f"run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {done.returncode}: {last}")
    print(f"median {statistics.median(walls):.2f} s, worst {max(walls):.2f} s (bound: 5 s)")


if __name__ == "__main__":
    main()
