"""``subscribe`` and ``alerts create`` take the search options of ``offers`` (one generated
set), and the CLI's former names still work, hidden, with a one-line deprecation note."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from typer.testing import CliRunner

from gpuscout.service.cli import app, command_from
from tests.service.commands.test_alerts_cli import database  # noqa: F401
from tests.service.digest.conftest import RecordingHandler, smtp_server  # noqa: F401


def _options(module: str, *path: str) -> dict[str, tuple[str, ...]]:
    command: Any = command_from(module, path[0])
    for name in path[1:]:
        command = command.commands[name]
    return {p.name: tuple(p.opts) for p in command.params if not getattr(p, "hidden", False)}


def test_subscribe_and_alerts_create_take_the_offers_search_options() -> None:
    offers = _options("pricing", "offers")
    for module, path in (("digest", ("subscribe",)), ("alerts", ("alerts", "create"))):
        taken = _options(module, *path)
        search = {n: o for n, o in offers.items() if n in taken}
        # every model option of offers, under the same names (its own: output and layout;
        # serving a model, which a saved search does not keep)
        assert set(offers) - set(search) == {
            "sample", "fmt", "group_by", "wide", "columns", "precision", "mfu", "scaling",
            "sort", "limit", "preset", "serve", "scenario", "tokens_per_day", "input_tokens",
            "output_tokens", "ttft_s", "tpot_s",
        } - set(taken), path  # fmt: skip
        assert all(taken[n] == o for n, o in search.items()), path


def _stored_search(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = sa.create_engine(url)
    with engine.connect() as c:
        req, job = c.execute(sa.text("select requirement, job from subscription")).one()
    engine.dispose()
    return json.loads(req), json.loads(job)


def test_subscribe_stores_the_options_search(database: str) -> None:  # noqa: F811
    args = ["subscribe", "--email", "a@example.org", "--name", "w", "--preset", "8xh100"]
    args += ["--regions", "us,eu", "--job-gpus", "16", "--hours", "10"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    requirement, job = _stored_search(database)
    assert requirement["gpus"] == ["H100"] and requirement["regions"] == ["us", "eu"]
    assert job == {"hours": 10.0, "gpus": 16}


def test_subscribe_gpus_as_a_count_is_the_deprecated_job_gpus(database: str) -> None:  # noqa: F811
    args = ["subscribe", "--email", "a@example.org", "--name", "w", "--gpus", "8"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "note: --gpus N (a job GPU count) is deprecated; use --job-gpus N" in result.stderr
    requirement, job = _stored_search(database)
    assert "gpus" not in requirement and job["gpus"] == 8


def test_estimate_old_names_work_with_a_note() -> None:
    old = ["estimate", "--gpu", "H100-SXM5-80GB", "--count", "8"]
    tail = ["--model-params", "1e9", "--tokens", "1e10", "--sample", "--format", "json"]
    runner = CliRunner()
    before = runner.invoke(app, [*old, *tail])
    after = runner.invoke(
        app, ["estimate", "--gpu-model", "H100-SXM5-80GB", "--job-gpus", "8", *tail]
    )
    assert before.exit_code == after.exit_code == 0, before.output + after.output
    assert "note: --gpu is deprecated; use --gpu-model" in before.stderr
    assert "note: --count is deprecated; use --job-gpus" in before.stderr
    assert "deprecated" not in after.stderr
    strip = lambda out: json.loads(out)["estimate"]  # noqa: E731
    assert strip(before.stdout) == strip(after.stdout)
    both = runner.invoke(app, [*old, "--job-gpus", "8", *tail])
    assert both.exit_code == 2 and "--count is the deprecated name of --job-gpus" in both.stderr
    hidden = runner.invoke(app, ["estimate", "--help"], env={"COLUMNS": "200"})
    assert "--gpu-model" in hidden.stdout and "--count" not in hidden.stdout


def test_history_old_gpu_works_with_a_note(database: str) -> None:  # noqa: F811
    runner = CliRunner()
    old = runner.invoke(app, ["history", "--gpu", "H100", "--days", "2"])
    new = runner.invoke(app, ["history", "--gpus", "H100", "--days", "2"])
    assert old.exit_code == new.exit_code == 0, old.output + new.output
    assert "note: --gpu is deprecated; use --gpus" in old.stderr
    assert old.stdout == new.stdout
    missing = runner.invoke(app, ["history"])
    assert missing.exit_code == 2 and "--gpus: required" in missing.stderr


def test_a_bad_preset_or_requirement_is_one_line_naming_its_option(database: str) -> None:  # noqa: F811
    """Not JSON, JSON that is not an object, an unknown preset: exit 2 with one line that
    names the option, for both commands; nothing is stored."""
    cases = [
        (["--requirement", "nope"], "--requirement: not JSON (Expecting value"),
        (["--requirement", "[1]"], "--requirement: a JSON object of requirement fields"),
        (["--requirement", "null"], "such as '{\"gpus\": [\"H100\"], \"min_gpus\": 8}', not null"),
        (["--preset", "nope"], "--preset: unknown preset 'nope'; known: 8xa100-pretrain,"),
        (["--requirement", '{"gpus": "H100"}'], "--requirement: gpus: Input should be a valid"),
        (["--requirement", '{"gpus": ["H999"]}'], "--requirement: gpus: unknown GPU model"),
        (["--requirement", '{"gpuz": 1}'], "--requirement: gpuz: Extra inputs are not permitted"),
        (["--email", "nope"], "--email: not a valid email address"),
    ]  # fmt: skip
    for command, noun in ((["subscribe"], "subscription"), (["alerts", "create"], "alert")):
        base = [*command, "--email", "a@example.org", "--name", "w"]
        base += ["--below", "2"] if noun == "alert" else []
        for args, said in cases:
            result = CliRunner().invoke(app, [*base, *args])
            assert result.exit_code == 2, (args, result.output)
            assert result.stderr.startswith(f"invalid {noun}: "), result.stderr
            assert said in result.stderr, result.stderr
            assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    own = [
        (["subscribe", "--tz", "Mars/Base"], "invalid subscription: --tz: unknown time zone"),
        (["alerts", "create", "--below", "2", "--metric", "nope"], "invalid alert: --metric: "),
        (["alerts", "create", "--below", "-2"], "invalid alert: --below: Input should be greater"),
        (["alerts", "create", "--drop-pct", "150"], "invalid alert: --drop-pct: Input should be"),
    ]  # fmt: skip
    for args, said in own:
        result = CliRunner().invoke(app, [*args, "--email", "a@example.org", "--name", "w"])
        assert result.exit_code == 2 and result.stderr.startswith(said), result.stderr
    engine = sa.create_engine(database)
    with engine.connect() as c:
        assert c.execute(sa.text("select count(*) from subscription")).scalar_one() == 0
    engine.dispose()
