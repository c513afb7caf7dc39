"""Each HTTP adapter's fake: its recorded responses (``tests/fixtures/<provider>/``) served
at the paths it calls, and how a body fault rewrites them.

A :class:`FakeProvider` answers one :class:`~tests.faults.server.Request` with the healthy
body, and :meth:`FakeProvider.rewrite` turns that body into a faulty one:

* ``drift``: a key the provider documents renamed (``drift = (old, new)``), everywhere in
  the body (the CSV header for AWS);
* ``rejected``: every price (the values of ``prices`` that are numbers) replaced by
  ``"n/a"``, so that each record is rejected;
* ``zero`` / ``huge``: every price set to 0 / 1e9 (the contract's floor and ceiling).

``tune`` narrows an adapter to what the recordings cover (one region, one price unit), as
the adapter tests do. Nothing here invents a response format: the bodies are the fixtures,
plus AWS's region index as ``tests/adapters/test_aws.py`` builds it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from gpuscout.adapters.base import Adapter

from .server import Fault, Request

__all__ = ["PROVIDERS", "FakeProvider"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

JSON = "application/json"


def fixture(path: str) -> bytes:
    return (FIXTURES / path).read_bytes()


#: (method, path) -> fixture file, or a function of the request giving the body.
Routes = Mapping[tuple[str, str], str | Callable[[Request], bytes]]


@dataclasses.dataclass(frozen=True)
class FakeProvider:
    name: str
    routes: Routes
    prices: frozenset[str]
    drift: tuple[str, str]
    credentials: Mapping[str, str] = dataclasses.field(default_factory=dict)
    content_type: str = JSON
    tune: Callable[[Adapter], None] | None = None
    #: How many of the answer's price units make one unit of its currency (OVHcloud counts
    #: 10^-8 euros): the ``huge`` fault's price is 1e9 currency units whatever the scale.
    price_scale: float = 1

    def answer(self, request: Request) -> tuple[str, bytes] | None:
        route = self.routes.get((request.method, request.path))
        if route is None:
            return None
        body = fixture(f"{self.name}/{route}") if isinstance(route, str) else route(request)
        content_type = "text/csv" if route_is_csv(route) else self.content_type
        return content_type, body

    def rewrite(self, fault: Fault, content_type: str, body: bytes) -> bytes:
        if content_type == "text/csv":
            return self._rewrite_csv(fault, body)
        data = json.loads(body)
        if fault is Fault.DRIFT:
            data = _renamed(data, *self.drift)
        elif fault is Fault.HUGE:
            data = _repriced(data, self.prices, lambda value: _like(value, 1e9 * self.price_scale))
        else:
            data = _repriced(data, self.prices, _NEW_PRICE[fault])
        return json.dumps(data).encode()

    def _rewrite_csv(self, fault: Fault, body: bytes) -> bytes:
        lines = body.decode().splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith('"SKU"'))
        if fault is Fault.DRIFT:
            old, new = self.drift
            lines[header] = lines[header].replace(f'"{old}"', f'"{new}"')
            return ("\n".join(lines) + "\n").encode()
        columns = next(csv.reader([lines[header]]))
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for line in lines[header + 1 :]:
            row = next(csv.reader([line]))
            for i, column in enumerate(columns):
                if column in self.prices and _number(row[i]) is not None:
                    row[i] = str(_NEW_PRICE[fault](row[i]))
            writer.writerow(row)
        return ("\n".join(lines[: header + 1]) + "\n" + out.getvalue()).encode()


def route_is_csv(route: str | Callable[[Request], bytes]) -> bool:
    return isinstance(route, str) and route.endswith(".csv")


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return Decimal(value)
        except InvalidOperation:
            return None
    return None


def _like(value: Any, new: float) -> Any:
    """``new`` in the type the provider used (a string stays a string)."""
    if isinstance(value, str):
        return format(Decimal(str(new)), "f")
    return new


_NEW_PRICE: dict[Fault, Callable[[Any], Any]] = {
    Fault.REJECTED: lambda value: "n/a",
    Fault.ZERO: lambda value: _like(value, 0),
    Fault.HUGE: lambda value: _like(value, 1e9),
}


def _renamed(data: Any, old: str, new: str) -> Any:
    if isinstance(data, dict):
        return {(new if k == old else k): _renamed(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_renamed(v, old, new) for v in data]
    return data


def _repriced(data: Any, keys: frozenset[str], new: Callable[[Any], Any]) -> Any:
    if isinstance(data, dict):
        return {
            k: new(v) if k in keys and _number(v) is not None else _repriced(v, keys, new)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [_repriced(v, keys, new) for v in data]
    return data


# --- providers whose answers need the request ------------------------------------------


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


#: AWS's region index, as tests/adapters/test_aws.py builds it (the documented shape of
#: ``/offers/v1.0/aws/AmazonEC2/current/region_index.json``): one region.
_AWS_VERSION = "/offers/v1.0/aws/AmazonEC2/20250912225308"
_AWS_REGION_INDEX = {
    "formatVersion": "v1.0",
    "publicationDate": "2025-09-12T22:53:08Z",
    "regions": {
        "us-east-1": {
            "regionCode": "us-east-1",
            "currentVersionUrl": f"{_AWS_VERSION}/us-east-1/index.json",
        }
    },
}

_TENCENT_BY_CHARGE = {
    "POSTPAID_BY_HOUR": "describe_zone_instance_config_infos_postpaid_gpu.reconstructed.json",
    "PREPAID": "describe_zone_instance_config_infos_prepaid_gpu.reconstructed.json",
    "SPOTPAID": "describe_zone_instance_config_infos_spotpaid_gpu.reconstructed.json",
}


def _tencent(request: Request) -> bytes:
    (charge,) = json.loads(request.body)["Filters"][0]["Values"]
    return fixture(f"tencent/{_TENCENT_BY_CHARGE[charge]}")


def _compshare(request: Request) -> bytes:
    """CompShare answers every call at one address; the form's ``Action`` picks the
    documented example answer (a price answer is the ``response`` of the paired fixture)."""
    action = _form_action(request)
    if action == "DescribeCompShareSupportZone":
        return fixture("compshare/describe_support_zone.docs_example.verbatim.json")
    if action == "DescribeAvailableCompShareInstanceTypes":
        return fixture("compshare/describe_available_instance_types.docs_example.verbatim.json")
    paired = json.loads(fixture("compshare/instance_price_4090_1x.docs_example.paired.json"))
    return _json(paired["response"])


def _form_action(request: Request) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(request.body.decode()).get("Action")
    return values[0] if values else None


def _alibaba(request: Request) -> bytes:
    """ECS answers by action (the ``x-acs-action`` header), as the adapter test's mock."""
    action = request.headers["x-acs-action"]
    if action == "DescribeInstanceTypes":
        return fixture("alibaba/ecs_describe_instance_types_gpu.reconstructed.json")
    if action == "DescribeAvailableResource":
        return fixture("alibaba/ecs_describe_available_resource_gpu.reconstructed.json")
    if action == "DescribePrice":
        return fixture("alibaba/ecs_describe_price_gpu.reconstructed.json")
    spot = json.loads(fixture("alibaba/ecs_describe_spot_price_history.reconstructed.json"))
    for row in spot["SpotPrices"]["SpotPriceType"]:  # recorded for one type: the type asked
        row["InstanceType"] = request.query["InstanceType"]
    return _json(spot)


def _set(**attributes: Any) -> Callable[[Adapter], None]:
    def tune(adapter: Adapter) -> None:
        for name, value in attributes.items():
            setattr(adapter, name, value)

    return tune


def _prices(*names: str) -> frozenset[str]:
    return frozenset(names)


_TOKEN = "oauth2_token_response.reconstructed.json"

PROVIDERS: dict[str, FakeProvider] = {
    p.name: p
    for p in [
        FakeProvider(
            "lambda",
            {
                ("GET", "/instance-types"): "instance_types_response.verbatim.json",
                ("GET", "/images"): "images_response.verbatim.json",
            },
            _prices("price_cents_per_hour"),
            ("data", "instance_types"),
            {"lambda_api_key": "k"},
        ),
        FakeProvider(
            "verda",
            {
                ("POST", "/oauth2/token"): _TOKEN,
                ("GET", "/instance-types"): "instance_types.gpuhunt_fixture.verbatim.json",
                ("GET", "/locations"): "locations.gpuhunt_fixture.verbatim.json",
                ("GET", "/instance-availability"): (
                    "instance_availability_spot.gpuhunt_fixture.verbatim.json"
                ),
            },
            _prices("price_per_hour", "spot_price"),
            ("instance_type", "instanceType"),
            {"verda_client_id": "id", "verda_client_secret": "secret"},
        ),
        FakeProvider(
            "cudo",
            {("GET", "/vms/machine-types-2"): "vms_machine_types.reconstructed.json"},
            _prices("value"),
            ("machineTypes", "machine_types"),
        ),
        FakeProvider(
            "vultr",
            {
                ("GET", "/plans"): "plans_vcg.gpuhunt_fixture.verbatim.json",
                ("GET", "/plans-metal"): "plans_metal.gpuhunt_fixture.verbatim.json",
            },
            _prices(
                "monthly_cost", "hourly_cost", "monthly_cost_preemptible", "hourly_cost_preemptible"
            ),
            ("plans", "plan_list"),
        ),
        FakeProvider(
            "vastai",
            {("POST", "/bundles/"): "bundles_response.reconstructed.json"},
            _prices("dph_base", "dph_total", "dph_total_adj", "discounted_dph_total", "min_bid"),
            ("offers", "results"),
        ),
        FakeProvider(
            "runpod",
            {("POST", "/graphql"): "graphql_gpuTypes_pricing.reconstructed.json"},
            _prices(
                "securePrice",
                "communityPrice",
                "secureSpotPrice",
                "communitySpotPrice",
                "oneWeekPrice",
                "oneMonthPrice",
                "threeMonthPrice",
                "sixMonthPrice",
                "clusterPrice",
                "uninterruptablePrice",
                "minimumBidPrice",
            ),
            ("gpuTypes", "gpu_types"),
        ),
        FakeProvider(
            "tensordock",
            {
                ("GET", "/locations"): "v2_locations.docs_plus_reconstructed.json",
                ("GET", "/hostnodes"): "v2_hostnodes.terraform_test.verbatim.json",
            },
            _prices("price_per_hr", "per_vcpu_hr", "per_gb_ram_hr", "per_gb_storage_hr"),
            ("locations", "sites"),
            {"tensordock_api_token": "t"},
        ),
        FakeProvider(
            "jarvislabs",
            {("GET", "/misc/server_meta"): "server_meta.gpuhunt_fixture.verbatim.json"},
            _prices("price_per_hour", "spot_price", "price"),
            ("server_meta", "servers"),
            {"jarvislabs_api_key": "k"},
        ),
        FakeProvider(
            "digitalocean",
            {("GET", "/sizes"): "sizes.gpuhunt_fixture.verbatim.json"},
            _prices("price_hourly", "price_monthly"),
            ("sizes", "droplet_sizes"),
            {"digitalocean_token": "t"},
        ),
        FakeProvider(
            "hyperstack",
            {
                ("GET", "/core/flavors"): "core_flavors.reconstructed.json",
                ("GET", "/pricebook"): "pricebook.gpu_keyed.reconstructed.json",
            },
            _prices("value", "original_value"),
            ("flavors", "flavor_list"),
            {"hyperstack_api_key": "k"},
        ),
        FakeProvider(
            "shadeform",
            {("GET", "/instances/types"): "instances_types.docs_example.verbatim.json"},
            _prices("hourly_price"),
            ("instance_types", "types"),
            {"shadeform_api_key": "k"},
        ),
        FakeProvider(
            "fluidstack",
            {
                ("GET", "/list_available_configurations"): (
                    "list_available_configurations.reconstructed.json"
                )
            },
            _prices("price_per_gpu_hr"),
            ("price_per_gpu_hr", "price_per_gpu_hour"),
            {"fluidstack_api_key": "k"},
        ),
        FakeProvider(
            "mithril",
            {
                ("GET", "/v2/instance-types"): "instance_types.reconstructed.json",
                ("GET", "/v2/spot/availability"): "spot_availability.reconstructed.json",
                ("GET", "/v2/pricing/current"): "pricing_current.reconstructed.json",
            },
            _prices(
                "spot_price_cents",
                "reserved_price_cents",
                "minimum_price_cents",
                "max_spot_price_cents",
                "max_reserved_price_cents",
                "lowest_allocated_bid_cents",
                "dynamic_win_price_cents",
            ),
            ("fid", "flow_id"),
            {"mithril_api_key": "fkey_k"},
        ),
        FakeProvider(
            "matpool",
            {("GET", "/api/machine_pools"): "machine_pools.reconstructed.json"},
            _prices("priceMillicent", "discountPriceMillicent"),
            ("pools", "machine_pools"),
        ),
        FakeProvider(
            "autodl",
            {
                ("GET", "/api/v1/autodl/region/tag"): (
                    "region_tag.gpuhunter_docstring.reconstructed.json"
                ),
                ("POST", "/api/v1/machine/region/gpu_type"): (
                    "region_gpu_type.gpuhunter_docstring.reconstructed.json"
                ),
                ("POST", "/api/v1/user/machine/list"): (
                    "machine_list.gpuhunter_docstring.reconstructed.json"
                ),
            },
            _prices("payg_price"),
            ("payg_price", "price"),
            {"autodl_token": "t"},
        ),
        FakeProvider(
            "compshare",
            {("POST", "/"): _compshare},
            _prices("Instance"),
            ("AvailableInstanceTypes", "InstanceTypes"),
            {"compshare_public_key": "pub", "compshare_private_key": "priv"},
        ),
        FakeProvider(
            "azure",
            {("GET", "/retail/prices"): "retail_prices_gpu_page.reconstructed.json"},
            _prices("retailPrice", "unitPrice"),
            ("Items", "items"),
        ),
        FakeProvider(
            "gcp",
            {("GET", "/services/6F81-5844-456A/skus"): "skus_page_gpu.reconstructed.json"},
            _prices("units", "nanos"),
            ("skus", "items"),
            {"gcp_api_key": "k"},
        ),
        FakeProvider(
            "oci",
            {
                ("GET", "/shapes.json"): "cost_estimator_shapes_gpu.reconstructed.json",
                ("GET", "/products.json"): "cost_estimator_products_excerpt.reconstructed.json",
            },
            _prices("value"),
            ("items", "products"),
        ),
        FakeProvider(
            "aws",
            {
                ("GET", "/offers/v1.0/aws/AmazonEC2/current/region_index.json"): (
                    lambda request: _json(_AWS_REGION_INDEX)
                ),
                (
                    "GET",
                    f"{_AWS_VERSION}/us-east-1/index.csv",
                ): "bulk_index_csv_gpu_rows.reconstructed.csv",
            },
            _prices("PricePerUnit"),
            ("PricePerUnit", "Price Per Unit"),
        ),
        FakeProvider(
            "tencent",
            {("POST", "/"): _tencent},
            _prices(
                "UnitPrice",
                "UnitPriceDiscount",
                *(
                    f"{kind}Price{term}"
                    for kind in ("Original", "Discount")
                    for term in ("", "OneYear", "ThreeYear", "FiveYear")
                ),
            ),
            ("InstanceTypeQuotaSet", "InstanceTypeQuotas"),
            {"tencent_secret_id": "id", "tencent_secret_key": "key"},
            tune=_set(regions=("ap-guangzhou",)),
        ),
        FakeProvider(
            "lium",
            {("GET", "/nodes"): "public_nodes.gpuhunt_fixture.verbatim.json"},
            _prices("price_per_gpu_hour", "price_per_node_hour"),
            ("nodes", "items"),
        ),
        FakeProvider(
            "scaleway",
            {
                ("GET", "/product-catalog/v2alpha1/public-catalog/products"): (
                    "products_instance_gpu.reconstructed.json"
                )
            },
            _prices("units", "nanos"),
            ("products", "items"),
        ),
        FakeProvider(
            "ovhcloud",
            {("GET", "/order/catalog/public/cloud"): "catalog_public_cloud_fr.reconstructed.json"},
            _prices("price"),
            ("addons", "add_ons"),
            price_scale=1e8,
        ),
        FakeProvider(
            "seeweb",
            {("GET", "/plans"): "plans.reconstructed.json"},
            _prices("hourly_price", "montly_price"),
            ("plans", "plan_list"),
            {"seeweb_api_token": "t"},
        ),
        FakeProvider(
            "primeintellect",
            {("GET", "/availability/gpus"): "availability_gpus.reconstructed.json"},
            _prices("onDemand", "communityPrice"),
            ("items", "results"),
            {"primeintellect_api_key": "k"},
        ),
        FakeProvider(
            "hyperbolic",
            {("POST", "/marketplace"): "marketplace.reconstructed.json"},
            _prices("amount"),
            ("instances", "nodes"),
        ),
        FakeProvider(
            "alibaba",
            {("POST", "/"): _alibaba},
            _prices("OriginalPrice", "DiscountPrice", "TradePrice", "SpotPrice", "OriginPrice"),
            ("InstanceTypes", "InstanceTypeSet"),
            {"alibaba_access_key_id": "id", "alibaba_access_key_secret": "secret"},
            tune=_set(regions=("cn-hangzhou",), price_units=("Hour",)),
        ),
    ]
}
