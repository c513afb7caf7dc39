from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuscout.service.cli import COMMAND_MODULES, app
from gpuscout.service.settings import get_settings


def _free_port() -> int:
    """A port nothing listens on now (serve checks it can bind before it starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("GPUSCOUT_API_PORT", str(_free_port()))
    monkeypatch.delenv("GPUSCOUT_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_registered() -> None:
    assert "serve" in COMMAND_MODULES


@pytest.mark.usefixtures("embedded")
def test_get_runs_one_request_on_the_sample(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--get", "/v1/offers?gpus=H100&limit=2"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout[result.stdout.index("{") :])
    assert body["source"] == "sample" and body["sample"] is True
    assert body["count"] <= 2
    assert (tmp_path / "gpuscout.db").exists()  # migrations applied on start


@pytest.mark.usefixtures("embedded")
def test_get_error_exits_1() -> None:
    result = CliRunner().invoke(app, ["serve", "--get", "/v1/offers?nope=1"])
    assert result.exit_code == 1
    assert "nope" in result.stdout


@pytest.fixture
def no_server(embedded: None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``uvicorn.run`` records the host instead of serving; no scheduler is started."""
    import uvicorn

    started: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda _app, host, **_kw: started.append(host))
    return started


def test_a_weak_secret_refuses_to_start_in_every_environment(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_ADMIN_TOKEN", "changeme")
    result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
    assert result.exit_code == 2 and no_server == []
    assert "Traceback" not in result.output
    (line,) = [s for s in result.output.splitlines() if s.strip()]
    assert line.startswith("error: configuration: GPUSCOUT_ADMIN_TOKEN: too weak")
    assert "at least 32 characters" in line and line.endswith("set GPUSCOUT_ADMIN_TOKEN")


def test_production_needs_the_token_secret(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_ENVIRONMENT", "production")
    result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
    assert result.exit_code == 2 and no_server == []
    assert "set GPUSCOUT_TOKEN_SECRET" in result.output


def test_unset_secrets_refuse_a_public_address(no_server: list[str]) -> None:
    result = CliRunner().invoke(app, ["serve", "--no-scheduler", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and no_server == []
    (line,) = [s for s in result.output.splitlines() if s.strip()]
    assert line.startswith("error: refusing to serve on 0.0.0.0 without")
    assert "GPUSCOUT_ADMIN_TOKEN" in line and "GPUSCOUT_TOKEN_SECRET" in line


def test_unset_secrets_on_loopback_are_a_note(no_server: list[str]) -> None:
    result = CliRunner().invoke(app, ["serve", "--no-scheduler", "--host", "127.0.0.1"])
    assert result.exit_code == 0 and no_server == ["127.0.0.1"]
    assert "unset: GPUSCOUT_ADMIN_TOKEN" in result.output


def test_real_secrets_start_without_a_word(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSCOUT_ENVIRONMENT", "production")
    monkeypatch.setenv("GPUSCOUT_ADMIN_TOKEN", "a-real-admin-token-0123456789abcdef")
    monkeypatch.setenv("GPUSCOUT_TOKEN_SECRET", "a-real-token-secret-0123456789abcdef")
    result = CliRunner().invoke(app, ["serve", "--no-scheduler", "--host", "0.0.0.0"])
    assert result.exit_code == 0 and no_server == ["0.0.0.0"]
    assert "secret" not in result.output.lower()


def test_serve_leaves_forwarded_headers_to_the_trusted_proxies_setting(
    embedded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn would rewrite the client from X-Forwarded-For whenever the peer is 127.0.0.1;
    only ``GPUSCOUT_TRUSTED_PROXIES`` may decide that (the mail limits count per client)."""
    import uvicorn

    seen: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda _app, **kw: seen.append(kw))
    result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
    assert result.exit_code == 0, result.output
    assert seen and seen[0]["proxy_headers"] is False


def test_several_workers_serve_the_app_factory_and_the_access_log_follows_its_setting(
    embedded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    seen: list[tuple[object, dict[str, object]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app_, **kw: seen.append((app_, kw)))
    monkeypatch.setenv("GPUSCOUT_API_ACCESS_LOG", "true")
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["serve", "--no-scheduler", "--workers", "2"])
    assert result.exit_code == 0, result.output
    target, kw = seen[0]
    assert target == "gpuscout.service.api.app:serving_app"
    assert (kw["workers"], kw["factory"], kw["access_log"]) == (2, True, True)
    result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
    target, kw = seen[1]
    assert not isinstance(target, str) and kw["workers"] is None and kw["factory"] is False


def test_the_parent_of_several_workers_builds_no_app(tmp_path: Path) -> None:
    """Each worker imports and builds its own app: the parent only migrates, binds and
    watches them, so it imports none of the API (nor polars) before starting them."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, uvicorn\n"
        "from gpuscout.service.cli import main\n"
        "uvicorn.run = lambda app, **kw: print('served', app, kw['workers'])\n"
        "sys.argv = ['gpuscout', 'serve', '--no-scheduler', '--workers', '2']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('imported',"
        " [m for m in ('gpuscout.service.api.app', 'polars') if m in sys.modules])\n"
    )
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root), "GPUSCOUT_DATA_DIR": str(tmp_path)}
    env["GPUSCOUT_API_PORT"] = str(_free_port())
    env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert "served gpuscout.service.api.app:serving_app 2" in done.stdout, done.stderr
    assert "imported []" in done.stdout, done.stdout
    assert (tmp_path / "gpuscout.db").exists()  # migrated before the workers start


@pytest.mark.parametrize(
    ("workers", "env", "expected"),
    [
        (2, {}, str(max(1, (os.cpu_count() or 1) // 2))),
        (2, {"GPUSCOUT_API_WORKER_POLARS_THREADS": "3"}, "3"),
        (2, {"POLARS_MAX_THREADS": "5"}, "5"),  # the operator's own
        (1, {}, None),  # one worker: polars' default, a thread per core
    ],
    ids=["cores-over-workers", "setting", "environment", "one-worker"],
)
def test_several_workers_start_with_their_share_of_polars_threads(
    tmp_path: Path, workers: int, env: dict[str, str], expected: str | None
) -> None:
    """The workers inherit ``POLARS_MAX_THREADS`` from the parent, which sets it before
    starting them (and imports no polars of its own without a scheduler)."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, uvicorn\n"
        "from gpuscout.service.cli import main\n"
        "uvicorn.run = lambda app, **kw: print('threads', os.environ.get('POLARS_MAX_THREADS'))\n"
        f"sys.argv = ['gpuscout', 'serve', '--no-scheduler', '--workers', '{workers}']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('polars imported', 'polars' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parents[3]
    base = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    run_env = {**base, "PYTHONPATH": str(root), "GPUSCOUT_DATA_DIR": str(tmp_path), **env}
    run_env["GPUSCOUT_API_PORT"] = str(_free_port())
    run_env.pop("GPUSCOUT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=run_env
    )
    assert f"threads {expected}" in done.stdout, (done.stdout, done.stderr)
    if workers > 1:
        assert "polars imported False" in done.stdout


def test_serve_runs_the_scheduler_in_a_child_process_and_stops_it(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshots never share the API's process: ``serve`` starts the scheduler as a child
    and stops it (as Ctrl-C does) when the server stops."""
    from gpuscout.service.commands import serve

    children: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:  # a child that waits as the scheduler does
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        children.append(child)
        return child

    monkeypatch.setattr(serve, "start_scheduler", start)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    (child,) = children
    assert no_server and child.returncode is not None  # stopped, not left running


def test_the_scheduler_command_is_what_serve_starts() -> None:
    """The child runs ``gpuscout scheduler`` with this interpreter."""
    from gpuscout.service.commands import serve

    done = subprocess.run(
        [sys.executable, "-m", "gpuscout.service.cli", "scheduler", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "scheduler alone" in done.stdout, done.stderr
    assert serve.start_scheduler.__doc__ is not None


def _one_error(result: object) -> str:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    assert "Traceback" not in output and "gpuscout API on" not in output, output
    (line,) = [s for s in output.splitlines() if s.strip()]
    assert line.startswith("error: "), line
    return line


@pytest.mark.parametrize(
    ("args", "env", "names"),
    [
        ([], {"GPUSCOUT_API_HOST": "999.1.1.1"}, "GPUSCOUT_API_HOST: '999.1.1.1'"),
        (["--host", "999.1.1.1"], {}, "--host: '999.1.1.1'"),
        (["--host", "::1::2"], {}, "--host: '::1::2'"),
    ],
)
def test_a_host_that_cannot_be_bound_is_one_line_before_the_url(
    no_server: list[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    names: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    line = _one_error(CliRunner().invoke(app, ["serve", "--no-scheduler", *args]))
    assert line.startswith(f"error: {names} is not an IP address; expected"), line
    assert no_server == []


@pytest.mark.parametrize("from_option", [True, False], ids=["--port", "GPUSCOUT_API_PORT"])
def test_a_port_in_use_is_one_line_naming_it(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch, from_option: bool
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["serve", "--no-scheduler", "--host", "127.0.0.1"]
        if from_option:
            args += ["--port", str(port)]
        else:
            monkeypatch.setenv("GPUSCOUT_API_PORT", str(port))
            get_settings.cache_clear()
        line = _one_error(CliRunner().invoke(app, args))
    name = "--port" if from_option else "GPUSCOUT_API_PORT"
    assert line.startswith(f"error: {name}: port {port} on 127.0.0.1 is already in use"), line
    assert no_server == []


def test_a_restart_on_a_database_at_head_runs_no_migration(
    no_server: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuscout.db import migrate
    from gpuscout.db.migrate import HEAD_REVISION, current_revision

    ran: list[object] = []
    upgrade = migrate.upgrade
    monkeypatch.setattr(migrate, "upgrade", lambda url: ran.append(url) or upgrade(url))
    for _ in range(2):
        result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
        assert result.exit_code == 0, result.output
    assert len(ran) == 1 and len(no_server) == 2  # the first start migrated, the second not
    assert current_revision(f"sqlite:///{tmp_path / 'gpuscout.db'}") == HEAD_REVISION


def test_an_unreachable_database_is_a_warning_before_serving(
    no_server: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql+psycopg://nobody@127.0.0.1:{_free_port()}/nothing?connect_timeout=5"
    monkeypatch.setenv("GPUSCOUT_DATABASE_URL", url)
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["serve", "--no-scheduler"])
    assert result.exit_code == 0, result.output
    assert "migrations not applied: " in result.output and no_server == ["127.0.0.1"]
