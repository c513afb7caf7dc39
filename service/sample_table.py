"""The README's table of the offline sample: each provider it holds, its GPUs, the date of
its prices and the recording they came from, made from the manifest and the replayed
sample (``uv run python -m gpuscout.service.sample_table`` prints it; a test checks the
README shows the current one).

The dates are the manifest's (:mod:`adapters.sample`): a capture date, or "unknown" with
the latest it can be. A provider recorded through a published catalog carries the
catalog entry's date and says so.
"""

from __future__ import annotations

from gpuscout.adapters.run import ProviderRun
from gpuscout.adapters.sample import SampleEntry, replay_sample, sample_entries

__all__ = ["sample_table"]


def _dated(entry: SampleEntry) -> str:
    if entry.captured is not None:
        return entry.captured.isoformat()
    return f"unknown (on record by {entry.dated.isoformat()})"


def _row(run: ProviderRun, entries: dict[str, SampleEntry]) -> str:
    catalogs = sorted({o.via_catalog for o in run.offers if o.via_catalog})
    entry = entries[run.source or run.provider]  # a catalog's providers: the catalog's
    sellers = sorted({o.seller for o in run.offers if o.seller})
    name = f"`{run.provider}`" + (f" ({', '.join(sellers)})" if sellers else "")
    gpus = sorted({o.gpu_model for o in run.offers if o.gpu_model})
    if catalogs:
        recorded = f"via {', '.join(catalogs)}"
    else:
        recorded = "price sheet" if run.provider == "sheet" else "its API's answer"
    return f"| {name} | {len(run.offers)} | {', '.join(gpus)} | {_dated(entry)} | {recorded} |\n"


def sample_table() -> str:
    """The sample's providers as a Markdown table, one row each, by provider name."""
    entries = {e.provider: e for e in sample_entries()}
    runs = sorted(replay_sample(), key=lambda r: r.provider)
    head = "| provider | offers | GPU models | prices dated | recorded |\n|---|---:|---|---|---|\n"
    return head + "".join(_row(run, entries) for run in runs)


if __name__ == "__main__":  # python -m gpuscout.service.sample_table: the README's table
    print(sample_table(), end="")
