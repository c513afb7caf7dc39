"""The docs' examples run: the README's two first commands, and every CLI example the README
and ``docs/*.md`` show, each document's in its own order."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from gpuscout.service.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
#: The documents whose examples run: the README, then every page of docs/.
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Examples that need the network or run a server: shown, not run here.
NOT_RUN = ("gpuscout snapshot\n", "gpuscout serve", "gpuscout fx update")


def commands(text: str) -> list[str]:
    """The commands ``text`` shows, in order, but those not run: its ``uv run gpuscout ...``
    lines, then the commands written in its prose (a command with two options or more, no
    placeholder: a bare ``gpuscout offers`` or ``gpuscout offer ID`` names a command, it is
    no example)."""
    found = re.findall(r"^uv run (gpuscout [^#\n]*?)\s*(?:#.*)?$", text, flags=re.M)
    prose = re.findall(r"`(gpuscout [a-z]+(?: --?\S+(?: [^-`\s]\S*)?){2,})`", text)
    found += [
        c for c in prose if c not in found and "..." not in c and not re.search(r"[A-Z]{2}", c)
    ]
    return [c for c in found if not any((c + "\n").startswith(n) for n in NOT_RUN)]


def examples() -> list[tuple[str, str]]:
    """Each document's examples, as (document name, command)."""
    return [
        (path.relative_to(ROOT).as_posix(), command)
        for path in DOCUMENTS
        for command in commands(path.read_text("utf-8"))
    ]


def answers(stdout: str) -> bool:
    """Whether a command's output answers something: JSON with offers (or any other
    non-empty value), JSON lines, or text whose tables hold a row after their header."""
    text = stdout.strip()
    if not text:
        return False
    if text[0] in "[{":
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = [json.loads(line) for line in text.splitlines()]  # JSON lines
        return bool(value.get("offers", value) if isinstance(value, dict) else value)
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if re.match(r"^\s*[┡━─╇]{3,}", line)]
    return all(
        any(re.search(r"\w", line) and not re.match(r"^\s*[└─━]", line) for line in lines[i + 1 :])
        for i in rules
    )


def test_an_empty_table_is_no_answer() -> None:
    assert not answers("")
    assert not answers('{"offers": []}') and answers('{"offers": [{"rank": 1}]}')
    assert not answers(" offers (sample)\n#  provider\n─────────────\n")
    assert answers(" offers (sample)\n#  provider\n─────────────\n1  aws\n")


def test_first_lines_give_the_two_commands() -> None:
    head = README.splitlines()[:10]
    runs = [line for line in head if line.startswith("uv run ")]
    assert [r.split("#")[0].split()[:3] for r in runs] == [
        ["uv", "run", "gpuscout"],
        ["uv", "run", "pytest"],
    ]
    assert any("pip install uv" in line for line in head)


def test_examples_are_found() -> None:
    assert len(commands(README)) >= 6
    assert {document for document, _ in examples()} >= {"README.md", "docs/cli.md"}


#: The example that stores offers: the ones after it in the README read what it stored.
SNAPSHOT = "gpuscout snapshot --sample"


def _invoke(
    command: str, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Result:
    monkeypatch.setenv("GPUSCOUT_DATA_DIR", str(data_dir))
    monkeypatch.chdir(ROOT)
    from gpuscout.service.settings import get_settings

    get_settings.cache_clear()
    args = shlex.split(command)[1:]
    args = [str(tmp_path / a) if a.endswith(".png") else a for a in args]
    try:
        return CliRunner().invoke(app, args)
    finally:
        get_settings.cache_clear()


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A data dir as each example finds it in the README's order, whichever worker runs
    it: empty before the snapshot example, holding what it stored from it on."""
    before, after = tmp_path_factory.mktemp("readme-data"), tmp_path_factory.mktemp("readme-data")
    with pytest.MonkeyPatch.context() as monkeypatch:
        stored = _invoke(SNAPSHOT, after, tmp_path_factory.mktemp("readme-out"), monkeypatch)
    assert stored.exit_code == 0, stored.output
    return {"before": before, "after": after}


@pytest.mark.parametrize(("document", "command"), examples())
def test_example_runs(
    document: str,
    command: str,
    data_dirs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = commands((ROOT / document).read_text("utf-8"))
    after = SNAPSHOT in shown and shown.index(command) > shown.index(SNAPSHOT)
    data_dir = data_dirs["after" if after else "before"]
    result = _invoke(command, data_dir, tmp_path, monkeypatch)
    assert result.exit_code == 0, (command, result.output)
    assert answers(result.stdout), (command, result.output)


def test_coverage_table_is_the_generated_one() -> None:
    """docs/providers.md's field-coverage table is what the code counts on the offline
    sample (regenerate: ``uv run python -m gpuscout.service.field_coverage``)."""
    from gpuscout.service.field_coverage import sample_table

    text = (ROOT / "docs" / "providers.md").read_text("utf-8")
    shown = re.search(r"<!-- coverage:start -->\n(.*?)<!-- coverage:end -->", text, re.S)
    assert shown is not None, "docs/providers.md lacks the coverage table markers"
    assert shown.group(1) == sample_table()


def test_sample_table_is_the_generated_one() -> None:
    """The README's table of the offline sample is what the manifest and the replayed
    sample say (regenerate: ``uv run python -m gpuscout.service.sample_table``)."""
    from gpuscout.service.sample_table import sample_table

    shown = re.search(r"<!-- sample:start -->\n(.*?)<!-- sample:end -->", README, re.S)
    assert shown is not None, "README.md lacks the sample table markers"
    assert shown.group(1) == sample_table()


def test_readme_is_a_quickstart_and_no_doc_keeps_a_diary() -> None:
    """The README stays short (detail goes to docs/); no page names numbered runs or
    sessions: figures live in one current table in docs/performance.md."""
    assert len(README.splitlines()) <= 300
    pages = [*DOCUMENTS, ROOT / "ARCHITECTURE.md"]
    diary = re.compile(r"\b(?:session|run) #?\d+\b", re.I)
    found = {p.name: diary.findall(p.read_text("utf-8")) for p in pages}
    assert {name: hits for name, hits in found.items() if hits} == {}
