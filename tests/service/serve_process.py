"""A ``gpuscout serve`` process for tests that run the server for real: on a free port of
127.0.0.1, in a session of its own so it is stopped whole (its workers too), however the
test ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from typing import Any

import httpx

__all__ = ["CLI", "ServeProcess", "free_port"]

#: The ``gpuscout`` command, run by the interpreter under test.
CLI = "from gpuscout.service.cli import main; main()"


def free_port() -> int:
    """A port of 127.0.0.1 nothing listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``gpuscout serve --port <free> *args`` with ``env``; :meth:`stop` ends it."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", "--port", str(self.port), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=30, **kwargs)

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL if it has not ended within 10 s."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if self.process.stderr is not None:
            self.process.stderr.close()
