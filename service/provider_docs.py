"""The provider docs that follow from the adapters: the manifest of their declarations
(``adapters/data/providers.json``) and the tables of ``adapters/README.md`` (every provider,
every provider setting).

``uv run python -m gpuscout.service.provider_docs`` writes them all after an adapter is added
or changed; the tests check they are current. They live under ``adapters/`` so that adding a
provider changes no file outside it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gpuscout.adapters.declarations import declared, write_manifest

from .provider_facts import ProviderFacts, provider_facts

__all__ = ["ADAPTERS_README", "providers_markdown", "settings_markdown", "write_docs"]

#: The README the tables are written into, beside the adapters.
ADAPTERS_README = Path(__file__).resolve().parents[1] / "adapters" / "README.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def providers_markdown(facts: Sequence[ProviderFacts]) -> str:
    """The provider table: one row per provider; what the offers cover is the offline
    sample's (``—``: the provider is not in the sample)."""
    lines = [
        "| provider | name | prices from | account | settings | lifecycle | regions | GPU models"
        " | terms | checked |",
        "|---|---|---|---|---|---|---:|---|---|---|",
    ]
    for f in facts:
        covered = f.offers > 0
        lines.append(
            "| "
            + " | ".join(
                [
                    _cell(f.title),
                    f"`{f.name}`",
                    _cell(f.source),
                    "yes" if f.account_needed else "no",
                    " ".join(f"`{name}`" for name in f.settings),
                    _cell(f.lifecycle_note or f.lifecycle),
                    str(f.regions) if covered else "—",
                    ", ".join(f.gpu_models) if covered else "—",
                    ", ".join(f.terms) if covered else "—",
                    f.format_checked or "not recorded",
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def settings_markdown() -> str:
    """Every provider setting: its variable, provider, whether it is needed, what it is."""
    lines = ["| setting | provider | needed | what |", "|---|---|---|---|"]
    for d in declared():
        for s in d.settings:
            needed = "yes" if s.required else "no"
            what = s.description + (f" (default {s.default})" if s.default else "")
            lines.append(f"| `{s.env_name}` | `{d.name}` | {needed} | {_cell(what)} |")
        if d.base_url_setting:
            what = f"base URL of its API (a proxy, a mirror, a test server); default {d.base_url}"
            env = f"GPUSCOUT_{d.base_url_setting.upper()}"
            lines.append(f"| `{env}` | `{d.name}` | no | {_cell(what)} |")
    return "\n".join(lines) + "\n"


def sample_facts() -> list[ProviderFacts]:
    """Every provider's facts, its coverage counted over the offline sample."""
    from gpuscout.adapters.schema import default_fx

    from .current import load_sample

    return provider_facts(load_sample(default_fx()).frame)


def readme_text(current: str) -> str:
    """``current`` (the text of ``adapters/README.md``) with its generated tables renewed."""
    for marker, table in (
        ("providers", providers_markdown(sample_facts())),
        ("settings", settings_markdown()),
    ):
        head, tail = f"<!-- {marker}:start -->\n", f"<!-- {marker}:end -->"
        found = re.search(re.escape(head) + ".*?" + re.escape(tail), current, re.S)
        if found is None:
            raise ValueError(f"adapters/README.md lacks the {marker} table's markers")
        current = current[: found.start()] + head + table + tail + current[found.end() :]
    return current


def write_docs() -> list[Path]:
    """Write the manifest, then the README's tables (built on it); the paths written."""
    manifest = write_manifest()
    declared.cache_clear()
    ADAPTERS_README.write_text(readme_text(ADAPTERS_README.read_text("utf-8")), "utf-8")
    return [manifest, ADAPTERS_README]


if __name__ == "__main__":  # uv run python -m gpuscout.service.provider_docs
    for path in write_docs():
        print(f"wrote {path}")
