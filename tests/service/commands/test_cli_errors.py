"""Every command, given out-of-range numbers, unwritable paths, a broken database or
invalid settings, prints one line naming the problem and exits non-zero: no traceback.

The cases below must name every command of the CLI (a test walks the command tree), so a
new command is added here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from typer.main import get_command
from typer.testing import CliRunner, Result

from gpuscout.db.migrate import upgrade
from gpuscout.service.cli import app
from gpuscout.service.commands.errors import one_line
from gpuscout.service.fx import ECB_DAILY_URL
from gpuscout.service.settings import get_settings

ROOT = Path(__file__).resolve().parents[3]
ECB = ROOT / "tests/fixtures/fx/eurofxref-daily.2026-07-09.verbatim.xml"

#: Per command: arguments that make it read settings and use the database.
DATABASE_ARGS: dict[str, list[str]] = {
    "offers": ["offers"],
    "offer": ["offer", "acme|8x-h100|us-east-1|on_demand|instance"],
    "estimate": [
        "estimate",
        "--gpu-model",
        "H100-SXM5-80GB",
        "--job-gpus",
        "8",
        "--model-params",
        "1e9",
        "--tokens",
        "1e10",
    ],
    "history": ["history", "--gpus", "H100"],
    "history export": ["history", "export", "{tmp}/export"],
    "snapshot": ["snapshot", "--sample"],
    "serve": ["serve", "--get", "/v1/offers"],
    "mcp": ["mcp"],
    "subscribe": ["subscribe", "--email", "a@example.org", "--name", "weekly"],
    "digest send": ["digest", "send", "--dry-run"],
    "digest confirm": ["digest", "confirm", "some-token"],
    "digest unsubscribe": ["digest", "unsubscribe", "some-token"],
    "digest preview": ["digest", "preview", "--preset", "8xh100", "--out", "{tmp}/d.html"],
    "db upgrade": ["db", "upgrade"],
    "scheduler": ["scheduler"],
    "alerts create": ["alerts", "create", "--email", "a@example.org", "--name", "a", "--in-stock"],
    "alerts list": ["alerts", "list", "--email", "a@example.org"],
    "alerts firings": ["alerts", "firings", "1"],
    "alerts run": ["alerts", "run"],
}
#: Commands that read settings but not the database.
SETTINGS_ARGS: dict[str, list[str]] = {
    "providers": ["providers"],
    "fx show": ["fx", "show"],
    "fx update": ["fx", "update", "--out", "{tmp}/fx.toml"],
    "publish": ["publish", "{tmp}/catalog"],
    "follow": ["follow"],
    "keygen": ["keygen", "{tmp}/key.pem"],
}
#: Commands writing to an empty database (a read-only one refuses them).
WRITERS = ("snapshot", "subscribe", "alerts create")

#: ``estimate`` on the sample: ``[:3]`` the GPU, ``[:5]`` and the count.
ESTIMATE = ["estimate", "--gpu-model", "H100-SXM5-80GB", "--job-gpus", "8", "--sample"]
ESTIMATE += ["--params", "1e9", "--tokens", "1e10"]
#: (command, arguments, what the one line names); numbers out of range, NaN, Infinity.
BAD_NUMBERS: list[tuple[str, list[str], str]] = [
    ("offers", ["offers", "--sample", "--limit", "1" + "0" * 30], "--limit"),
    (
        "offers",
        ["offers", "--sample", "--serve", "llama-3.1-8b", "--tokens-per-day", "-1"],
        "--tokens-per-day",
    ),
    ("models", ["models", "--max-params-b", "nan"], "--max-params-b"),
    ("offers", ["offers", "--sample", "--hours", "1e400"], "--hours"),
    ("offers", ["offers", "--sample", "--hours", "nan"], "--hours"),
    ("offers", ["offers", "--sample", "--hours", "2e6"], "hours"),
    ("offers", ["offers", "--sample", "--job-gpus", "1" + "0" * 30], "--job-gpus"),
    ("offers", ["offers", "--sample", "--min-gpus", "inf"], "--min-gpus"),
    ("offers", ["offers", "--sample", "--max-usd-per-hour", "-1"], "--max-usd-per-hour"),
    ("offers", ["offers", "--sample", "--params", "1e300", "--tokens", "1e9"], "--params"),
    (
        "estimate",
        [*DATABASE_ARGS["estimate"][:3], "--job-gpus", "1" + "0" * 22, "--sample"],
        "--job-gpus",
    ),
    (
        "estimate",
        [*ESTIMATE[:5], "--params", "nan", "--tokens", "1e10"],
        "--params",
    ),
    (
        "estimate",
        [*ESTIMATE[:5], "--params", "1e30", "--tokens", "1e10"],
        "params",
    ),
    (
        "estimate",
        [*ESTIMATE, "--fabric-gbps-per-gpu", "inf"],
        "--fabric-gbps-per-gpu",
    ),
    ("estimate", [*ESTIMATE, "--precision", "fp64x"], "--precision"),
    ("history", ["history", "--gpus", "H100", "--days", "1000000"], "--days"),
    ("history", ["history", "--gpus", "H100", "--days", "1" + "0" * 30], "--days"),
    ("serve", ["serve", "--get", "/v1/offers", "--port", "70000"], "--port"),
    ("subscribe", [*DATABASE_ARGS["subscribe"], "--hours", "inf"], "--hours"),
    ("subscribe", [*DATABASE_ARGS["subscribe"], "--job-gpus", "1" + "0" * 21], "--job-gpus"),
    ("alerts create", [*DATABASE_ARGS["alerts create"][:-1], "--drop-pct", "nan"], "--drop-pct"),
    (
        "digest preview",
        [*DATABASE_ARGS["digest preview"], "--sample", "--hours", "1e400"],
        "--hours",
    ),
    (
        "digest preview",
        ["digest", "preview", "--subscription", "1" + "0" * 30, "--out", "{tmp}/d.html"],
        "--subscription",
    ),
    ("gpus", ["gpus", "--resolve", "H100", "--memory-gb", "nan"], "--memory-gb"),
]

#: (command, arguments, the path the one line names): paths that cannot be written (or read).
BAD_PATHS: list[tuple[str, list[str], str]] = [
    ("parse", ["parse", "vastai", "{tmp}/no-such-file.json"], "does not exist"),
    ("history", ["history", "--gpus", "H100", "--plot", "{tmp}/a-file/x.png"], "{tmp}/a-file"),
    (
        "digest preview",
        ["digest", "preview", "--preset", "8xh100", "--sample", "--out", "{tmp}/gone/x.html"],
        "{tmp}/gone/x.html",
    ),
    (
        "digest preview",
        [*DATABASE_ARGS["digest preview"], "--sample", "--text", "{tmp}"],
        "{tmp}",
    ),
    ("fx update", ["fx", "update", "--out", "{tmp}/a-file/fx.toml"], "{tmp}/a-file"),
    ("db upgrade", ["db", "upgrade", "--url", "sqlite:///{tmp}/a-file/x.db"], "{tmp}/a-file"),
]

#: Broken database URLs: (label, URL, what the one line names).
BROKEN_URLS: list[tuple[str, str, str]] = [
    ("refused", "postgresql+psycopg://scout@127.0.0.1:1/gpuscout", "Connection refused"),
    ("not a URL", "garbage", "GPUSCOUT_DATABASE_URL"),
    ("unsupported", "mysql://scout@127.0.0.1/gpuscout", "GPUSCOUT_DATABASE_URL"),
    ("under a file", "sqlite:///{tmp}/a-file/x.db", "{tmp}/a-file"),
]


def _leaf_commands() -> set[str]:
    names: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        if not hasattr(command, "list_commands"):  # a leaf (groups load theirs lazily)
            names.add(prefix)
            return
        if command.invoke_without_command:  # a group that is a command of its own too
            names.add(prefix)
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            walk(command.get_command(ctx, name), f"{prefix} {name}".strip())

    walk(get_command(app), "")
    return names


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data dir and working directory; a regular file ``a-file`` to write under;
    the scheduler and the web server refuse to start (a case must never reach them)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    for name in ("GPUSCOUT_DATABASE_URL", "GPUSCOUT_ENVIRONMENT", "GPUSCOUT_FX_RATES_FILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "a-file").write_text("not a directory")
    import apscheduler.schedulers.blocking
    import uvicorn

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a broken configuration must stop before this starts")

    monkeypatch.setattr(apscheduler.schedulers.blocking.BlockingScheduler, "start", refuse)
    monkeypatch.setattr(uvicorn, "run", refuse)
    get_settings.cache_clear()
    with respx.mock(assert_all_called=False) as mock:  # fx update: no network
        mock.get(ECB_DAILY_URL).mock(return_value=httpx.Response(200, text=ECB.read_text()))
        yield tmp_path
    get_settings.cache_clear()


def _run(tmp: Path, args: list[str], env: dict[str, str] | None = None) -> Result:
    get_settings.cache_clear()
    args = [a.replace("{tmp}", str(tmp)) for a in args]
    env = {k: v.replace("{tmp}", str(tmp)) for k, v in (env or {}).items()}
    return CliRunner().invoke(app, args, env=env)


def _assert_one_clear_line(result: Result, names: str, tmp: Path) -> None:
    names = names.replace("{tmp}", str(tmp))
    output = result.output
    assert result.exit_code != 0, output
    assert "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception),
        output,
    )
    naming = [line for line in output.splitlines() if names in line]
    assert len(naming) == 1, (names, output)


def test_the_cases_cover_every_command() -> None:
    covered = (
        set(DATABASE_ARGS)
        | set(SETTINGS_ARGS)
        | {c for c, _a, _n in BAD_NUMBERS}
        | {c for c, _a, _n in BAD_PATHS}
    )
    assert _leaf_commands() == covered


@pytest.mark.parametrize(("label", "url", "names"), BROKEN_URLS, ids=[u[0] for u in BROKEN_URLS])
@pytest.mark.parametrize("command", sorted(DATABASE_ARGS))
def test_broken_database_url(tmp: Path, command: str, label: str, url: str, names: str) -> None:
    result = _run(tmp, DATABASE_ARGS[command], {"GPUSCOUT_DATABASE_URL": url})
    _assert_one_clear_line(result, names, tmp)


@pytest.mark.parametrize("command", WRITERS)
def test_read_only_sqlite(tmp: Path, command: str) -> None:
    """A SQLite file opened read-only (``mode=ro``; file permissions do not stop root)."""
    path = tmp / "ro.db"
    upgrade(f"sqlite:///{path}")
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    result = _run(tmp, DATABASE_ARGS[command], {"GPUSCOUT_DATABASE_URL": url})
    _assert_one_clear_line(result, "readonly database", tmp)


@pytest.mark.parametrize("command", sorted({**DATABASE_ARGS, **SETTINGS_ARGS}))
def test_invalid_settings(tmp: Path, command: str) -> None:
    args = {**DATABASE_ARGS, **SETTINGS_ARGS}[command]
    for env in ({"GPUSCOUT_API_PORT": "0"}, {"GPUSCOUT_HTTP_RETRIES": "many"}):
        result = _run(tmp, args, env)
        _assert_one_clear_line(result, next(iter(env)), tmp)


@pytest.mark.parametrize(
    ("command", "args", "names"), BAD_NUMBERS, ids=[" ".join(a[:4]) for _c, a, _n in BAD_NUMBERS]
)
def test_bad_numbers(tmp: Path, command: str, args: list[str], names: str) -> None:
    _assert_one_clear_line(_run(tmp, args), names, tmp)


@pytest.mark.parametrize(
    ("command", "args", "names"), BAD_PATHS, ids=[" ".join(a[:4]) for _c, a, _n in BAD_PATHS]
)
def test_unwritable_paths(tmp: Path, command: str, args: list[str], names: str) -> None:
    _assert_one_clear_line(_run(tmp, args), names, tmp)


def test_a_bug_keeps_its_traceback() -> None:
    """Only the errors of bad input and a broken environment are one line."""
    assert one_line(KeyError("x")) is None
    assert one_line(AttributeError("x")) is None
    assert one_line(FileNotFoundError(2, "No such file or directory", "/x")) == (
        "/x: No such file or directory",
        1,
    )


@pytest.mark.parametrize(
    "env",
    [
        {"GPUSCOUT_PROVIDERS_DISABLED": '["vastai"'},
        {"GPUSCOUT_PRICE_SHEET_PATHS": "[/x.csv]"},
        {"GPUSCOUT_CORS_ORIGINS": '["https://a.example", 1]'},
        {"GPUSCOUT_TRUSTED_PROXIES": "10.0.0.1,not-an-ip"},
    ],
    ids=lambda env: next(iter(env)),
)
def test_a_broken_list_setting_is_one_line_naming_it(tmp: Path, env: dict[str, str]) -> None:
    result = _run(tmp, ["offers", "--sample"], env)
    _assert_one_clear_line(result, f"error: configuration: {next(iter(env))}: ", tmp)
    assert result.exit_code == 2


def test_list_settings_take_commas(tmp: Path) -> None:
    result = _run(tmp, ["offers", "--sample"], {"GPUSCOUT_PROVIDERS_DISABLED": "vastai"})
    assert result.exit_code == 0, result.output
    assert get_settings().providers_disabled == ["vastai"]


def test_an_undecodable_setting_names_its_variable() -> None:
    """pydantic-settings' own decoding error (a complex setting read as JSON) says which
    variable it was, should one ever escape ``NoDecode``."""
    from pydantic_settings import SettingsError

    try:
        try:
            raise ValueError("Expecting value: line 1 column 1 (char 0)")
        except ValueError as cause:
            raise SettingsError(
                'error parsing value for field "extra_hosts" from source "EnvSettingsSource"'
            ) from cause
    except SettingsError as exc:
        said = one_line(exc)
    assert said == (
        "configuration: GPUSCOUT_EXTRA_HOSTS: not valid JSON (Expecting value: line 1 column 1"
        " (char 0)); a JSON value is expected",
        2,
    )


#: (label, GPUSCOUT_DATA_DIR under tmp, the one line's end)
BAD_DATA_DIRS: list[tuple[str, str, str]] = [
    ("a file", "{tmp}/a-file", "{tmp}/a-file is a file, not a directory"),
    (
        "under a file",
        "{tmp}/a-file/data",
        "{tmp}/a-file/data cannot be created: {tmp}/a-file is a file",
    ),
]


@pytest.mark.parametrize(
    ("label", "data_dir", "says"), BAD_DATA_DIRS, ids=[d[0] for d in BAD_DATA_DIRS]
)
@pytest.mark.parametrize("command", sorted(DATABASE_ARGS))
def test_an_unusable_data_dir_is_named(
    tmp: Path, command: str, label: str, data_dir: str, says: str
) -> None:
    result = _run(tmp, DATABASE_ARGS[command], {"GPUSCOUT_DATA_DIR": data_dir})
    _assert_one_clear_line(result, f"error: GPUSCOUT_DATA_DIR: {says}", tmp)
    assert result.exit_code == 2


def test_a_data_dir_that_cannot_be_created_is_named(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``mkdir`` fails under /sys (even for root): the setting, the path, the reason."""
    import errno

    data_dir = tmp / "not-yet"
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(data_dir))
    get_settings.cache_clear()
    denied = PermissionError(errno.EPERM, "Operation not permitted", str(data_dir))
    assert one_line(denied) == (
        f"GPUSCOUT_DATA_DIR: {data_dir} cannot be created: Operation not permitted",
        2,
    )
    # a parent failing (mkdir of the missing parents) is the data dir failing ...
    parent = PermissionError(errno.EPERM, "Operation not permitted", str(tmp))
    assert one_line(parent) == one_line(denied)
    # ... another path is not, nor anything once the data dir exists
    other = PermissionError(errno.EPERM, "Operation not permitted", str(tmp / "other"))
    assert one_line(other) == (f"{tmp / 'other'}: Operation not permitted", 1)
    data_dir.mkdir()
    assert one_line(denied) == (f"{data_dir}: Operation not permitted", 1)


#: ``alerts create`` on USD per million tokens: without ``--serve``, or a bad serve option.
_ALERT = ["alerts", "create", "--email", "a@example.org", "--name", "a"]
BAD_SERVING_ALERTS: list[tuple[list[str], str]] = [
    ([*_ALERT, "--below", "0.5", "--metric", "usd_per_m_tokens"], "needs a serve request"),
    (
        [*_ALERT, "--in-stock", "--serve", "llama-3.1-8b", "--tokens-per-day", "-1"],
        "--tokens-per-day",
    ),
    ([*_ALERT, "--in-stock", "--serve", "no-such-model"], "--serve"),
    ([*DATABASE_ARGS["subscribe"], "--serve", "llama-3.1-8b", "--scenario", "x"], "--scenario"),
]


@pytest.mark.parametrize(("args", "names"), BAD_SERVING_ALERTS, ids=lambda a: str(a)[-30:])
def test_a_serving_alert_is_refused_in_one_line(tmp: Path, args: list[str], names: str) -> None:
    _assert_one_clear_line(_run(tmp, args), names, tmp)
