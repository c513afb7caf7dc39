"""``POST /v1/estimate``: what a training run costs, for one GPU model and count or across
the qualifying offers.

With ``gpu_model`` and ``job_gpus`` (formerly ``gpu_count``, still accepted, deprecated):
:func:`pricing.estimate.estimate` on a reference topology, priced with the cheapest current
offer making exactly that many GPUs. Without ``gpu_model``: the run (``model_params`` x
``tokens`` on ``job_gpus`` GPUs, or one instance of each offer) is ranked across the offers
qualifying under ``requirement``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuscout.adapters.gpus import Precision
from gpuscout.adapters.schema import Fabric
from gpuscout.pricing.estimate import Estimate, EstimateInputError, estimate
from gpuscout.pricing.job import Job
from gpuscout.pricing.names import one_gpu_model
from gpuscout.pricing.requirement import Requirement

from ..answer_schema import Provenance, RankedOffer
from ..answers import page_header, ranked_offers
from ..deps import ContextDep, NoQueryDep, StateDep
from ..engine_inputs import ParsedQuery, checked_providers
from ..problems import problem_responses
from ..vocabulary import deprecation_headers, deprecation_note

__all__ = ["EstimateAnswer", "EstimateRequest", "router"]

router = APIRouter(prefix="/v1/estimate", tags=["estimate"], dependencies=[NoQueryDep])

Factor = Annotated[float, Field(gt=0, le=1)]


class EstimateRequest(BaseModel):
    """A training run: ``6 x model_params x tokens`` FLOPs."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model_params: Annotated[float | None, Field(gt=0, le=1e15)] = Field(
        default=None, description="model parameters (required)", examples=[7e9]
    )
    params: Annotated[float | None, Field(gt=0, le=1e15)] = Field(
        default=None,
        description="deprecated: use model_params",
        json_schema_extra={"deprecated": True},
    )
    tokens: Annotated[float, Field(gt=0, le=1e16, description="training tokens")]
    gpu_model: str | None = Field(
        default=None,
        max_length=100,
        description="one GPU model: canonical name, or a name meaning one model (H100 SXM);"
        " omit to rank offers",
    )
    job_gpus: Annotated[int | None, Field(ge=1, le=100_000)] = Field(
        default=None, description="GPUs the run uses (required with gpu_model)", examples=[8]
    )
    gpu_count: Annotated[int | None, Field(ge=1, le=100_000)] = Field(
        default=None,
        description="deprecated: use job_gpus",
        json_schema_extra={"deprecated": True},
    )
    requirement: Requirement | None = Field(
        default=None, description="without gpu_model: which offers qualify"
    )
    precision: Precision = Precision.BF16
    mfu: Factor | None = Field(default=None, description="replace the modelled MFU")
    scaling: Factor | None = Field(default=None, description="replace the modelled scaling")
    fabric: Fabric | None = Field(
        default=None,
        description="with gpu_model: assume this fabric between nodes, whatever the offers"
        " state (default: the offer's, else infiniband)",
    )
    fabric_gbps_per_gpu: Annotated[float | None, Field(gt=0, le=1e5)] = Field(
        default=None,
        description="with gpu_model: assume this fabric bandwidth per GPU, Gbit/s, whatever"
        " the offers state (default: the offer's, else 400)",
    )
    layers: Annotated[int | None, Field(ge=1, le=10_000)] = Field(
        default=None, description="transformer layers (attention FLOPs and activations)"
    )
    hidden_size: Annotated[int | None, Field(ge=1, le=1_000_000)] = Field(
        default=None, description="model width d (attention FLOPs and activations)"
    )
    context_tokens: Annotated[int | None, Field(ge=1, le=10_000_000)] = Field(
        default=None, description="sequence length in training (attention FLOPs, activations)"
    )
    active_params: Annotated[float | None, Field(gt=0, le=1e15)] = Field(
        default=None,
        description="with gpu_model: a mixture of experts' active parameters (FLOPs);"
        " model_params is then its total (memory)",
        examples=[37e9],
    )
    limit: Annotated[int, Field(ge=1, le=100)] = 10

    @model_validator(mode="after")
    def _mode(self) -> EstimateRequest:
        if self.params is not None:
            if self.model_params is not None:
                raise ValueError("params: deprecated name of model_params; give model_params only")
            self.model_params = self.params
        if self.model_params is None:
            raise ValueError("model_params: required (the model's parameter count)")
        if self.gpu_count is not None:
            if self.job_gpus is not None:
                raise ValueError("gpu_count: deprecated name of job_gpus; give job_gpus only")
            self.job_gpus = self.gpu_count
        if self.gpu_model is not None:
            try:  # a name meaning one model stands for it ("H100 SXM": H100-SXM5-80GB)
                self.gpu_model = one_gpu_model(self.gpu_model).name
            except ValueError as exc:
                raise ValueError(f"gpu_model: {exc}") from None
            if self.job_gpus is None:
                raise ValueError("job_gpus: required with gpu_model")
            if self.requirement is not None:
                raise ValueError("requirement: only without gpu_model")
        else:
            # ranked across offers, each runs on its own fabric: a given one would be ignored
            for name in ("fabric", "fabric_gbps_per_gpu"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}: only with gpu_model (across offers each offer's own fabric"
                        " counts; filter them with requirement.fabrics)"
                    )
        return self


class EstimateAnswer(Provenance):
    """Where the data comes from (as in ``/v1/offers``), then the estimate or the offers."""

    mode: str = Field(description="model (one GPU model and count) | offers")
    estimate: Estimate | None = Field(
        None,
        description="mode model: the run on that model and count, with the cheapest offer"
        " that can run it in `estimate.offer` (null: none can); null in mode offers",
    )
    offers: list[RankedOffer] = Field(
        default_factory=list,
        description="mode offers: the `limit` cheapest qualifying offers for the run, by"
        " cost per effective TFLOP-hour; empty in mode model (see `estimate.offer`)",
    )


@router.post(
    "",
    response_model=EstimateAnswer,
    responses=problem_responses(413, 422, 503),
)
async def estimate_cost(
    body: EstimateRequest, state: StateDep, context: ContextDep, response: Response
) -> EstimateAnswer:
    """Estimate what a training run costs.

    Two modes. With `gpu_model` and `job_gpus`: the run on that many GPUs of that model
    (a reference topology), priced with the cheapest current offer making exactly that
    many GPUs. Without `gpu_model`: the run ranked across the offers qualifying under
    `requirement`, on `job_gpus` GPUs or one instance of each offer.
    """
    now = state.answer_time()
    header = page_header(state, now)
    head = {name: header[name] for name in Provenance.model_fields}
    old_names = [
        (old, new)
        for old, new in (("gpu_count", "job_gpus"), ("params", "model_params"))
        if getattr(body, old) is not None
    ]
    deprecation_headers(old_names, response.headers)
    head["warnings"] = [*head["warnings"], *(deprecation_note(o, n) for o, n in old_names)]
    params = body.model_params or 0.0
    if body.gpu_model is not None:
        assert body.job_gpus is not None
        try:
            result = await context.ranking(
                lambda: estimate(
                    body.gpu_model or "",
                    body.job_gpus or 1,
                    params,
                    body.tokens,
                    offers=state.frame,
                    precision=body.precision,
                    fabric=body.fabric,
                    fabric_gbps_per_gpu=body.fabric_gbps_per_gpu,
                    mfu=body.mfu,
                    scaling=body.scaling,
                    layers=body.layers,
                    hidden_size=body.hidden_size,
                    context_tokens=body.context_tokens,
                    unrankable=state.unrankable,  # the snapshot's, found once
                    active_params=body.active_params,
                )
            )
        except ValidationError as exc:  # the job's bounds (the body's match them): a 422
            raise RequestValidationError(
                [
                    {**e, "loc": ("body", *e["loc"])}
                    for e in exc.errors(include_url=False, include_context=False)
                ]
            ) from None
        except EstimateInputError as exc:  # e.g. no published peak of this GPU at this precision
            field = exc.field
            message = str(exc)
            if field == "precision":
                message = (
                    f"gpu_model {body.gpu_model!r} at precision {body.precision.value!r}: {exc}"
                )
            raise RequestValidationError(
                [
                    {
                        "type": "value_error",
                        "loc": ("body", field),
                        "msg": message,
                        "input": getattr(body, field, None),
                    }
                ]
            ) from None
        return EstimateAnswer(mode="model", estimate=result, **head)
    try:
        job = Job.training(params, body.tokens, gpus=body.job_gpus)
    except ValidationError as exc:  # the bounds above make this unreachable; still a 422
        raise RequestValidationError(
            [
                {**e, "loc": ("body", *e["loc"])}
                for e in exc.errors(include_url=False, include_context=False)
            ]
        ) from None
    requirement = body.requirement or Requirement()
    # a provider nothing has would only empty the answer
    requirement = checked_providers(requirement, state.known_providers, ("body", "requirement"))
    parsed = ParsedQuery(
        requirement=requirement,
        job=job,
        precision=body.precision,
        sort="usd_per_effective_tflop_hour",
        limit=body.limit,
        mfu=body.mfu,
        scaling=body.scaling,
        key="",
    )
    offers = await context.ranking(ranked_offers, state, parsed, now)
    return EstimateAnswer(
        mode="offers", offers=[RankedOffer.model_validate(o) for o in offers], **head
    )
