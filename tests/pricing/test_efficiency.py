from __future__ import annotations

from pricing import catalog_frame, default_efficiency


def test_defaults_load_with_sources() -> None:
    eff = default_efficiency()
    assert eff.mfu_bf16("A100") == 0.50
    assert eff.mfu_bf16("H100") == 0.41
    assert eff.mfu_bf16("RTX-4090") == eff.default_mfu_bf16
    assert all(entry.source for entry in eff.family_mfu)
    assert eff.scaling.nvlink > eff.scaling.pcie > eff.scaling.pcie_no_p2p


def test_catalog_frame_has_a_row_per_gpu() -> None:
    frame = catalog_frame()
    assert frame["gpu_model"].is_unique().all()
    row = frame.filter(gpu_model="RTX-4090").row(0, named=True)
    assert row["pcie_no_p2p"] is True
