from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpuscout.pricing import Job, JobKind


def test_kinds() -> None:
    assert Job.for_hours(3).kind is JobKind.HOURS
    assert Job.for_gpu_hours(3).kind is JobKind.GPU_HOURS
    assert Job.training(1e9, 1e10).kind is JobKind.TRAINING


def test_training_flops_and_memory() -> None:
    job = Job.training(7e9, 2e12)
    assert job.total_flops == pytest.approx(8.4e22)
    assert job.memory_needed_gb("bf16") == pytest.approx(112.0)  # 16 bytes/param
    assert job.min_gpus_to_fit(80.0, "bf16") == 2  # 112 / (80 x 0.8)
    assert Job.for_hours(1).memory_needed_gb("bf16") is None


def test_the_bytes_per_param_that_fit_are_the_room_beside_the_activations() -> None:
    """70B on 8x 80 GB: each GPU keeps ~9.5 GB of activations and floor, so the state gets
    8 x 70.5 GB: 8.05 bytes per parameter; at exactly that bound the job fits."""
    job = Job.training(70e9, 1e9)
    extra = job.per_gpu_extra_gb()
    assert extra is not None
    bound = job.max_bytes_per_param_to_fit(80.0, 8)
    assert bound == pytest.approx((80.0 - extra) * 8 / 70)
    lean = Job(params=70e9, tokens=1e9, bytes_per_param=bound)
    assert lean.memory_per_gpu_gb(8, "bf16") == pytest.approx(80.0)
    assert job.min_gpus_to_fit(80.0, "bf16") == 16  # 1120 / (80 - 9.5) = 15.9
    assert job.max_bytes_per_param_to_fit(extra, 8) is None  # activations alone fill it
    assert Job.for_hours(1).max_bytes_per_param_to_fit(80.0, 8) is None


@pytest.mark.parametrize(
    "data",
    [{}, {"hours": 1, "gpu_hours": 2}, {"params": 1e9}, {"hours": -1}, {"hours": 1, "x": 1}],
)
def test_invalid_jobs(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Job.model_validate(data)


@pytest.mark.parametrize(
    ("data", "got"),
    [
        ({"hours": 10, "params": 7e9, "tokens": 1e12}, "(got hours, params, tokens)"),
        ({"gpu_hours": 10, "params": 7e9, "tokens": 1e12}, "(got gpu_hours, params, tokens)"),
        # beside hours alone params only sizes the memory check: not part of the conflict
        ({"hours": 1, "gpu_hours": 2, "params": 7e9}, "(got hours, gpu_hours)"),
    ],
)
def test_a_conflict_names_every_input_of_it(data: dict[str, object], got: str) -> None:
    with pytest.raises(ValidationError) as info:
        Job.model_validate(data)
    assert got in str(info.value)
