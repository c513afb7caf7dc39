"""Unknown GPU and provider names are refused by name, with the closest known ones."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpuscout.adapters import provider_names
from gpuscout.pricing import Requirement
from gpuscout.pricing.frame import offers_to_frame
from gpuscout.pricing.names import (
    UnknownName,
    check_providers,
    did_you_mean,
    known_providers,
    one_gpu_model,
    similar_names,
    unknown_gpus_message,
)

from .factories import make_offer

FRAME = offers_to_frame(
    [
        make_offer(provider="lambda", offer_id="a"),
        make_offer(provider="sheet", seller="my-own-cloud", offer_id="my-own-cloud/b"),
        make_offer(provider="acme", offer_id="c", price_amount=Decimal("3")),
    ]
)
KNOWN = known_providers(FRAME, provider_names())


def test_known_providers_are_the_adapters_and_the_data_s_providers_and_sellers() -> None:
    assert set(provider_names()) <= KNOWN
    assert {"acme", "my-own-cloud", "sheet"} <= KNOWN
    assert set(provider_names()) | {"acme", "my-own-cloud"} == KNOWN


@pytest.mark.parametrize("name", ["lambda", "runpod", "acme", "my-own-cloud"])
def test_a_known_provider_passes(name: str) -> None:
    check_providers(Requirement(providers=(name,)), KNOWN)
    check_providers(Requirement(exclude_providers=(name,)), KNOWN)


@pytest.mark.parametrize("field", ["providers", "exclude_providers"])
def test_an_unknown_provider_is_refused_with_a_did_you_mean(field: str) -> None:
    with pytest.raises(UnknownName) as info:
        check_providers(Requirement.model_validate({field: ("lamda",)}), KNOWN)
    assert info.value.field == field
    message = info.value.message
    assert message.startswith("unknown provider 'lamda' (did you mean 'lambda'?); known: ")
    assert "my-own-cloud" in message and "runpod" in message


def test_several_unknown_providers_are_each_named() -> None:
    with pytest.raises(
        UnknownName, match=r"unknown providers 'lamda' \(did you mean 'lambda'\?\), 'zzz';"
    ):
        check_providers(Requirement(providers=("lamda", "zzz", "acme")), KNOWN)


def test_a_provider_in_another_case_is_the_known_one() -> None:
    given = Requirement(providers=("Lambda", "RUNPOD"), exclude_providers=("My-Own-Cloud",))
    spelled = check_providers(given, KNOWN)
    assert spelled.providers == ("lambda", "runpod")
    assert spelled.exclude_providers == ("my-own-cloud",)
    exact = Requirement(providers=("lambda",))
    assert check_providers(exact, KNOWN) is exact


def test_similar_names_ignore_case() -> None:
    assert similar_names("LAMDA", ["lambda", "vastai"]) == ("lambda",)
    assert similar_names("qqq", ["lambda"]) == ()


def test_did_you_mean_wording() -> None:
    assert did_you_mean(()) == ""
    assert did_you_mean(("a",)) == " (did you mean 'a'?)"
    assert did_you_mean(("a", "b", "c")) == " (did you mean 'a', 'b' or 'c'?)"


def test_unknown_gpus_message_suggests_catalog_names() -> None:
    message = unknown_gpus_message(["H1000", "blah"])
    assert message.startswith("unknown GPU model, family or vendor: 'H1000' (did you mean 'H100'")
    assert message.endswith(", 'blah'")


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("H100-SXM5-80GB", "H100-SXM5-80GB"),
        ("h100-sxm5-80gb", "H100-SXM5-80GB"),
        ("H100 SXM", "H100-SXM5-80GB"),
        ("4090", "RTX-4090"),
        ("GH200", "GH200-96GB"),  # a family of one model
    ],
)
def test_one_gpu_model_resolves_a_name_meaning_one_model(name: str, model: str) -> None:
    assert one_gpu_model(name).name == model


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("H100", "'H100' is a family: one of H100-SXM5-80GB, H100-PCIE-80GB, H100-NVL-94GB"),
        ("A100 80GB", "'A100 80GB' names several models: one of A100-SXM4-80GB, A100-PCIE-80GB"),
        ("amd", "'amd' is a vendor: give one of its"),
        ("H1000", "unknown GPU model 'H1000' (did you mean 'H100'"),
        ("blah", "unknown GPU model 'blah'"),
    ],
)
def test_one_gpu_model_refuses_a_name_meaning_none_or_several(name: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        one_gpu_model(name)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("written", "provider"),
    [
        ("矩池云", "matpool"),
        ("优云智算", "compshare"),
        ("腾讯云", "tencent"),
        ("阿里云", "alibaba"),
        ("autodl", "autodl"),
        ("Tencent Cloud", "tencent"),
        ("ALIYUN", "alibaba"),
    ],
)
def test_a_platform_s_own_name_is_its_provider(written: str, provider: str) -> None:
    checked = check_providers(Requirement(providers=(written,)), KNOWN)
    assert checked.providers == (provider,)


def test_every_alias_names_a_registered_provider_and_carries_its_source() -> None:
    from gpuscout.adapters import provider_aliases

    aliases = provider_aliases()
    assert set(aliases.values()) <= set(provider_names())
    assert aliases["矩池云"] == "matpool"
