from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuscout.pricing import catalog_frame, default_efficiency
from gpuscout.pricing.efficiency import Scaling


def test_defaults_load_with_sources() -> None:
    eff = default_efficiency()
    assert eff.mfu_bf16("A100") == 0.50
    assert eff.mfu_bf16("H100") == 0.41
    assert eff.mfu_bf16("RTX-4090") == eff.default_mfu_bf16
    assert all(entry.source for entry in eff.family_mfu)
    # the reference topology (NVLink nodes, >= 400 Gbps/GPU RDMA) scores 1.0: the MFU
    # figures were measured there (Llama 3: 8 GPUs on NVLink, 400 Gbps per GPU, 16k H100)
    assert eff.scaling.nvlink == 1.0
    assert eff.scaling.fabric_points[-1] == (400.0, 1.0)
    assert eff.scaling.nvlink > eff.scaling.nvlink_bridge > eff.scaling.pcie
    assert eff.scaling.separate_nodes <= eff.scaling.pcie
    assert eff.interruptible.rate_source and eff.scaling.fabric_source


def test_fabric_points_must_be_monotone() -> None:
    data = default_efficiency().scaling.model_dump()
    data["fabric_points"] = [[1.0, 0.9], [400.0, 0.8]]
    with pytest.raises(ValidationError, match="never scores lower"):
        Scaling.model_validate(data)


def test_catalog_frame_has_a_row_per_gpu() -> None:
    frame = catalog_frame()
    assert frame["gpu_model"].is_unique().all()
    row = frame.filter(gpu_model="RTX-4090").row(0, named=True)
    assert row["pcie_no_p2p"] is True
