"""Property tests over the OpenAPI schema: no input gives a 5xx or breaks the schema.

The app is built on the fake offers and a migrated SQLite file (so the history routes run
for real); examples are bounded so the module takes well under a minute.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # import-time deprecations of schemathesis' dependencies
    import schemathesis
    from hypothesis import HealthCheck, settings
    from schemathesis.specs.openapi.checks import positive_data_acceptance

from db.engine import make_engine, sqlite_url
from db.migrate import upgrade
from service.api import create_app
from service.settings import Settings

from .conftest import ADMIN_TOKEN, FakeSource, database_state, sample_offers, stale

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def _app():  # type: ignore[no-untyped-def]
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="gpuscout-st-"))
    url = sqlite_url(tmp / "st.db")
    upgrade(url)
    offers = sample_offers()
    source = FakeSource(database_state(offers, stale("bolt", offers)))

    async def runner(*, on_start):  # type: ignore[no-untyped-def]
        on_start()
        return []

    return create_app(
        Settings(_env_file=None, data_dir=tmp, admin_token=ADMIN_TOKEN),  # type: ignore[call-arg, arg-type]
        offers_loader=source,
        history=make_engine(url),
        snapshot_runner=runner,
    )


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_conforms(case: schemathesis.Case) -> None:
    # Cross-parameter rules (min_gpus <= max_gpus, one job size, ...) cannot be said in
    # OpenAPI: a schema-valid request may rightly get a 422. Every other check runs: no
    # 5xx, documented status codes, content types, headers and bodies.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
