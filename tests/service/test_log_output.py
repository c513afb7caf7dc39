"""``service.log_output``: the service's own lines on standard error, as a server runs."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from gpuscout.service.log_output import SERVICE_LOGGER, service_log, show_service_log


@pytest.fixture
def service_logger() -> Iterator[logging.Logger]:
    """The ``gpuscout`` logger, put back as it was (no handler left for other tests)."""
    logger = logging.getLogger(SERVICE_LOGGER)
    handlers, level = list(logger.handlers), logger.level
    yield logger
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_info_lines_reach_the_stderr_of_the_moment_once(
    service_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = show_service_log()
    assert show_service_log() is handler  # once per process
    assert service_logger.handlers.count(handler) == 1
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    logging.getLogger("gpuscout.scheduler").info("snapshot 1 stored: 0 offers")
    logging.getLogger("gpuscout.fx").debug("not shown")
    monkeypatch.setattr("sys.stderr", second)  # a stream swapped later is the one written
    logging.getLogger("gpuscout.scheduler").warning("snapshot 2 stored: 1 failed")
    assert first.getvalue() == "INFO:     gpuscout.scheduler: snapshot 1 stored: 0 offers\n"
    assert second.getvalue() == "WARNING:  gpuscout.scheduler: snapshot 2 stored: 1 failed\n"


def test_service_log_puts_the_logger_back_after_its_block(
    service_logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` run in-process (a test's) must leave no handler writing into the output of
    the commands run after it."""
    before, level = list(service_logger.handlers), service_logger.level
    shown = io.StringIO()
    monkeypatch.setattr("sys.stderr", shown)
    with service_log() as handler:
        assert handler in service_logger.handlers
        logging.getLogger("gpuscout.api").info("refreshed")
    logging.getLogger("gpuscout.api").info("not shown: the block ended")
    assert shown.getvalue() == "INFO:     gpuscout.api: refreshed\n"
    assert service_logger.handlers == before and service_logger.level == level
