"""Tencent Cloud CVM GPU instances: every GPU type's price in every zone, per billing mode.

Sources (Tencent Cloud API 3.0, CVM API version ``2017-03-12``; formats as documented, the
test fixtures in tests/fixtures/tencent/ are built from these documents):

* **DescribeZoneInstanceConfigInfos** ("Querying the configurations of models in an
  availability zone", https://www.tencentcloud.com/document/api/213/33254, Chinese page
  https://cloud.tencent.com/document/product/213/17378): ``POST https://cvm.tencentcloudapi.com/``
  with the JSON body ``{"Filters": [{"Name": "instance-charge-type", "Values": [mode]}]}``
  and the region in the ``X-TC-Region`` header. One call answers every instance type of
  every zone of the region, with its price: ``Response.InstanceTypeQuotaSet[]``
  (``InstanceTypeQuotaItem``: ``Zone``, ``InstanceType``, ``InstanceChargeType``,
  ``InstanceFamily``, ``TypeName``, ``Cpu``, ``Memory`` in GB, ``CpuType``, ``GpuCount``
  (physical GPUs; below 1 for a vGPU slice), ``Status`` SELL / SOLD_OUT, ``Price``
  (``ItemPrice``)). Field meanings are those of the CVM data-types page
  (https://www.tencentcloud.com/document/api/213/15753). No pagination. :meth:`fetch`
  makes one call per region of :data:`GPU_REGIONS` and billing mode of
  :data:`CHARGE_TYPES`, and keeps only the GPU rows of each answer (CPU types are most of
  it); the kept payload has the documented shape.
* **Signature v3** (TC3-HMAC-SHA256, https://cloud.tencent.com/document/api/213/30654):
  :func:`tc3_authorization` signs the ``content-type`` and ``host`` headers and the body
  with the settings ``tencent_secret_id`` / ``tencent_secret_key``.
* **Errors**: Tencent answers HTTP 200 with ``Response.Error.{Code, Message}`` (the API 3.0
  "Responses" / "Error Codes" pages). An ``AuthFailure.*`` or ``UnauthorizedOperation`` code
  is a :class:`ProviderError` naming the code and message (the key is wrong everywhere);
  ``RequestLimitExceeded*``, ``InternalError`` and ``ServiceUnavailable`` are retried; any
  other error loses only that region and billing mode: it is kept in a last payload
  (:func:`~adapters.base.failed_calls_payload`) and becomes a skipped record, unless every
  call failed.
* **GPU model per instance family**: the API names no GPU, so :func:`gpu_families` maps the
  ``InstanceFamily`` to the GPU of Tencent's "GPU Computing Instance" page
  (https://www.tencentcloud.com/document/product/560/19701) and, for the rendering families,
  its "GPU Rendering Instance" page (https://intl.cloud.tencent.com/document/product/560/19700),
  as ``data/tencent_gpu_families.toml`` records them.

Prices (``ItemPrice``; the China site quotes them in yuan, "单位：元", so the currency is CNY
unless the setting ``tencent_currency`` says USD (the international site's SDK docs say USD
for the same fields); the API itself sends no currency, and nothing is converted here):

* ``POSTPAID_BY_HOUR`` -> on-demand, per instance-hour, at ``UnitPrice`` (the list price:
  "每小时原价", the hourly original price, in the field docs of Tencent's SDKs for
  ``ItemPrice``); where ``UnitPriceDiscount`` ("每小时折扣价", the hourly discounted price
  after ``Discount``, 100 meaning none: what the calling account is quoted) differs, a second
  offer at it whose ``term_variant`` says "account price"
  (:data:`~adapters.base.ACCOUNT_PRICE_VARIANT`; its ``term_variant`` is
  ``"<zone> (account price)"``). ``ChargeUnit`` must be ``HOUR``. Where Tencent returns step
  prices (``UnitPriceSecondStep``...), this is the price of the first 96 hours; the cheaper
  later steps are not modelled.
* ``SPOTPAID`` -> interruptible, per instance-hour: ``UnitPriceDiscount`` only (``UnitPrice``
  is the undiscounted list price, not a spot price).
* ``PREPAID`` -> ``OriginalPrice`` (list; ``DiscountPrice`` where it differs, as an
  "account price" offer, like the hourly ones) per month, as
  :data:`~adapters.schema.RentalTerm.COMMIT_1MO` (``prepaid``). The field is "the total
  prepaid cost" without a period of its own; Tencent's example answer (``OriginalPrice`` 59,
  ``OriginalPriceOneYear`` 708 = 12 x 59) shows it is one month. ``OriginalPriceOneYear`` and
  ``OriginalPriceThreeYear`` (and the ``DiscountPrice...`` ones alike) are whole-term prices of
  one and three years (:data:`~adapters.schema.PriceUnit.TERM`); five years has no term
  here and is dropped.

One offer per instance type, zone and term: ``offer_id`` is the instance type, ``region``
the zone's region and ``term_variant`` the zone, so the hourly, monthly, yearly and spot
prices of one type in one zone differ only in their term (and an account price in its
variant). A zero or missing price is no
price (Tencent fills fields that do not apply with 0).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import httpx

from .base import (
    ACCOUNT_PRICE_VARIANT,
    Adapter,
    FailedCall,
    ParseResult,
    ProviderError,
    ResponseFormatError,
    RetryPolicy,
    gpu_fields,
)
from .calls import CallFailure, fresh_retries, gather_limited, keep_failures
from .declarations import ProviderSetting
from .schema import OfferFields, PriceBasis, PriceUnit, RentalTerm
from .tables import sourced_rows, typed_row
from .units import (
    cpu_vendor,
    gpu_share,
    lenient_float,
    nominal_gpu_memory_gb,
    positive_decimal,
    positive_quantity,
    to_float,
    value_at,
)

__all__ = [
    "CHARGE_TYPES",
    "GPU_REGIONS",
    "GpuFamily",
    "TencentAdapter",
    "gpu_families",
    "region_countries",
    "tc3_authorization",
    "tc3_canonical_request",
    "tc3_signature",
    "tc3_string_to_sign",
]

API_HOST = "cvm.tencentcloudapi.com"
API_VERSION = "2017-03-12"
SERVICE = "cvm"
ACTION = "DescribeZoneInstanceConfigInfos"
ALGORITHM = "TC3-HMAC-SHA256"
JSON_CONTENT_TYPE = "application/json; charset=utf-8"
#: API calls under way at once (the documented limit is 40 calls a second for this action).
CONCURRENT_REQUESTS = 4

#: Billing modes asked for, in the ``instance-charge-type`` filter's values.
CHARGE_TYPES: tuple[str, ...] = ("POSTPAID_BY_HOUR", "PREPAID", "SPOTPAID")


@functools.cache
def region_countries() -> Mapping[str, str]:
    """Region code -> ISO country of the regions asked, read from ``data/tencent_regions.toml``
    (why these regions, and the sources, there) on first use."""
    return {row["region"]: row["country"] for row in sourced_rows("tencent_regions.toml", "region")}


#: Regions :meth:`TencentAdapter.fetch` queries by default, in the data file's order.
GPU_REGIONS: tuple[str, ...] = tuple(region_countries())

#: Error codes that say the key is wrong or lacks the permission: the provider fails.
AUTH_CODE_PREFIXES = ("AuthFailure", "UnauthorizedOperation")
#: Error codes worth another try (rate limit, passing server trouble).
RETRY_CODE_PREFIXES = ("RequestLimitExceeded", "InternalError", "ServiceUnavailable")


# --- signing (Signature v3) --------------------------------------------------------------


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac_sha256(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def _utc_date(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d")


def tc3_canonical_request(*, host: str, content_type: str, payload: bytes) -> str:
    """Step 1: the CanonicalRequest of a POST to ``/`` signing ``content-type`` and ``host``.

    Header keys and values are lower-cased and sorted, each line ends in ``\\n``; the query
    string of a POST is empty; the payload is hashed exactly as it is sent.
    """
    if not host or not content_type:
        raise ValueError("TC3 signing needs a host and a content type")
    headers = f"content-type:{content_type.strip().lower()}\nhost:{host.strip().lower()}\n"
    return "\n".join(["POST", "/", "", headers, "content-type;host", _sha256_hex(payload)])


def tc3_string_to_sign(*, timestamp: int, service: str, canonical_request: str) -> str:
    """Step 2: algorithm, timestamp, ``<UTC date>/<service>/tc3_request`` and the hash of
    the CanonicalRequest. The date is the UTC date of the timestamp, never a local one."""
    if timestamp < 0:
        raise ValueError(f"TC3 timestamp must be a UNIX time in seconds, not {timestamp}")
    scope = f"{_utc_date(timestamp)}/{service}/tc3_request"
    return "\n".join(
        [ALGORITHM, str(timestamp), scope, _sha256_hex(canonical_request.encode("utf-8"))]
    )


def tc3_signature(*, secret_key: str, date: str, service: str, string_to_sign: str) -> str:
    """Step 3: the hex HMAC-SHA256 of the string to sign with the derived key
    (``"TC3" + SecretKey`` -> date -> service -> ``tc3_request``)."""
    secret_date = _hmac_sha256(("TC3" + secret_key).encode("utf-8"), date)
    secret_service = _hmac_sha256(secret_date, service)
    secret_signing = _hmac_sha256(secret_service, "tc3_request")
    return hmac.new(secret_signing, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def tc3_authorization(
    *,
    secret_id: str,
    secret_key: str,
    service: str,
    host: str,
    payload: bytes,
    timestamp: int,
    content_type: str = JSON_CONTENT_TYPE,
) -> str:
    """Step 4: the ``Authorization`` header of one TC3-HMAC-SHA256 signed POST request."""
    if not secret_id or not secret_key:
        raise ValueError("TC3 signing needs a SecretId and a SecretKey")
    canonical = tc3_canonical_request(host=host, content_type=content_type, payload=payload)
    to_sign = tc3_string_to_sign(timestamp=timestamp, service=service, canonical_request=canonical)
    date = _utc_date(timestamp)
    signature = tc3_signature(
        secret_key=secret_key, date=date, service=service, string_to_sign=to_sign
    )
    return (
        f"{ALGORITHM} Credential={secret_id}/{date}/{service}/tc3_request, "
        f"SignedHeaders=content-type;host, Signature={signature}"
    )


# --- GPU of each instance family ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class GpuFamily:
    """The GPU of a Tencent instance family, as its "GPU Computing/Rendering Instance" page
    names it."""

    gpu_raw_name: str
    #: Video memory of one physical GPU, in the page's (nominal) GB.
    memory_gb: float


@functools.cache
def gpu_families() -> Mapping[str, GpuFamily]:
    """``InstanceFamily`` -> GPU, read from ``data/tencent_gpu_families.toml`` (the pages and
    their words there) on first use."""
    rows = sourced_rows("tencent_gpu_families.toml", "family")
    return {row["family"]: typed_row(GpuFamily, row) for row in rows}


@functools.cache
def _families_folded() -> Mapping[str, GpuFamily]:
    return {name.casefold(): family for name, family in gpu_families().items()}


# --- failures ----------------------------------------------------------------------------


def _failure(region: str, charge_type: str, code: str, message: str) -> CallFailure:
    """Why one region's prices in one billing mode were not fetched: Tencent's
    ``Response.Error.Code`` (the same in every region, so that failures group) and message,
    or for an HTTP or network failure (``code`` "") what went wrong on the way."""
    cause = code or message
    return CallFailure(
        FailedCall(f"tencent:{region}/{charge_type}", f"{charge_type} prices not fetched: {cause}"),
        cause,
        f"{region} {charge_type}",
        message if code else "",
    )


def _api_error(data: Any) -> tuple[str, str] | None:
    """``(Code, Message)`` of a Tencent error answer, None for a success."""
    error = value_at(data, "Response", "Error")
    if error is None:
        return None
    if not isinstance(error, Mapping):
        return ("", str(error))
    return (str(error.get("Code") or ""), str(error.get("Message") or "").strip())


def _retry_code(data: Any) -> bool:
    """A Tencent error answer worth another try (rate limit, passing server trouble)."""
    error = _api_error(data)
    return error is not None and error[0].startswith(RETRY_CODE_PREFIXES)


def _call_error(data: Any) -> tuple[str, str] | None:
    """``(Code, Message)`` of an error answer that costs its call only; a rejected key is a
    :class:`ProviderError` (it is wrong in every region and billing mode)."""
    error = _api_error(data)
    if error is not None and error[0].startswith(AUTH_CODE_PREFIXES):
        raise ProviderError(
            TencentAdapter.name,
            f"API key rejected: {error[0]}: {error[1]} (check GPUSCOUT_TENCENT_SECRET_ID and "
            f"GPUSCOUT_TENCENT_SECRET_KEY; the key needs the cvm:{ACTION} permission)",
        )
    return error


def _quota_set(data: Any) -> list[Any]:
    """``Response.InstanceTypeQuotaSet`` of a successful answer."""
    rows = value_at(data, "Response", "InstanceTypeQuotaSet")
    if not isinstance(rows, list):
        raise ResponseFormatError(
            TencentAdapter.name, f"{ACTION} answer has no 'Response.InstanceTypeQuotaSet' list"
        )
    return rows


def _has_gpu(row: Any) -> bool:
    if not isinstance(row, Mapping):
        return True  # not ours to judge here: parse skips it with a reason
    counts = (lenient_float(row.get("GpuCount")), lenient_float(row.get("Gpu")))
    return any(c is not None and c > 0 for c in counts)


# --- the adapter -------------------------------------------------------------------------


class TencentAdapter(Adapter):
    """Tencent Cloud CVM GPU instances: on-demand, monthly/yearly prepaid and spot, per zone."""

    name: ClassVar[str] = "tencent"
    title: ClassVar[str] = "Tencent Cloud"
    #: Where to rent: Tencent Cloud's CVM pricing page.
    pricing_url: ClassVar[str] = "https://www.tencentcloud.com/pricing/cvm"
    source_url: ClassVar[str] = "https://www.tencentcloud.com/document/api/213/33254"
    credential_names: ClassVar[tuple[str, ...]] = ("tencent_secret_id", "tencent_secret_key")
    #: ``tencent_currency``: the account's currency (the API does not send one).
    other_settings: ClassVar[tuple[ProviderSetting, ...]] = (
        ProviderSetting(
            name="tencent_currency",
            description="currency of the Tencent account's prices: CNY (China site) or USD"
            " (international site); the API does not say",
            choices=("CNY", "USD"),
            default="CNY",
        ),
    )
    #: Regions asked (a subclass or test may narrow them).
    regions: ClassVar[tuple[str, ...]] = GPU_REGIONS
    #: Billing modes asked, as ``instance-charge-type`` filter values.
    charge_types: ClassVar[tuple[str, ...]] = CHARGE_TYPES
    #: API base: the China site's host. Prices come in the account's currency, which the API
    #: does not name: yuan on the China site (the default), US dollars on the international
    #: site; the setting ``tencent_currency`` says which.
    base_url = f"https://{API_HOST}"
    default_currency: ClassVar[str] = "CNY"

    def __init__(
        self,
        credentials: Mapping[str, str | None] | None = None,
        *,
        policy: RetryPolicy | None = None,
        base_url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(credentials, policy=policy, base_url=base_url)
        #: The request timestamp source (signatures older than five minutes are refused).
        self.clock = clock
        currency = (self.credentials.get("tencent_currency") or self.default_currency).upper()
        if currency not in ("CNY", "USD"):
            raise ValueError(f"tencent_currency: CNY or USD, not {currency!r}")
        #: The currency every price of this account is in.
        self.currency = currency

    @property
    def host(self) -> str:
        """The host every call goes to and is signed for: that of :attr:`base_url`."""
        return urllib.parse.urlsplit(self.url()).netloc

    # fetch ---------------------------------------------------------------------------------
    async def fetch(self, client: httpx.AsyncClient) -> list[Any]:
        """One DescribeZoneInstanceConfigInfos answer per region and billing mode (GPU rows).

        A rejected key fails the provider at once. Any other failed call loses only its
        region and billing mode: the failures are logged as one warning and listed in a last
        payload (:func:`~adapters.base.failed_calls_payload`), unless every call failed,
        which fails the provider.
        """
        creds = self.require_credentials()

        async def one(region: str, charge_type: str) -> dict[str, Any] | CallFailure:
            try:
                data = await self._describe(client, creds, region, charge_type)
            except ProviderError as exc:  # HTTP, network or not-JSON: this call only
                return _failure(region, charge_type, "", exc.reason)
            error = _call_error(data)
            if error is not None:
                return _failure(region, charge_type, *error)
            return _gpu_rows_only(data)

        calls = [(r, c) for r in self.regions for c in self.charge_types]
        # a rejected key raises in one call and stops the others
        outcomes = await gather_limited(
            [functools.partial(one, *c) for c in calls], CONCURRENT_REQUESTS
        )
        payloads = [o for o in outcomes if not isinstance(o, CallFailure)]
        failures = [o for o in outcomes if isinstance(o, CallFailure)]
        return keep_failures(
            self.name, payloads, failures, calls=len(calls), what=f"{ACTION} calls"
        )

    async def _describe(
        self, client: httpx.AsyncClient, creds: Mapping[str, str], region: str, charge_type: str
    ) -> Any:
        """One call, signed anew for each try; rate-limit and server errors are retried."""
        body = json.dumps(
            {"Filters": [{"Name": "instance-charge-type", "Values": [charge_type]}]},
            separators=(",", ":"),
        ).encode("utf-8")

        async def attempt() -> Any:
            timestamp = int(self.clock())
            headers = {
                "Authorization": tc3_authorization(
                    secret_id=creds["tencent_secret_id"],
                    secret_key=creds["tencent_secret_key"],
                    service=SERVICE,
                    host=self.host,
                    payload=body,
                    timestamp=timestamp,
                ),
                "Content-Type": JSON_CONTENT_TYPE,
                "Host": self.host,
                "X-TC-Action": ACTION,
                "X-TC-Version": API_VERSION,
                "X-TC-Region": region,
                "X-TC-Timestamp": str(timestamp),
            }
            return await self.post_json(client, self.url("/"), content=body, headers=headers)

        return await fresh_retries(self.policy, result=_retry_code)(attempt)

    # decode / parse ----------------------------------------------------------------------
    def parse(self, payloads: Sequence[Any], *, fetched_at: datetime) -> ParseResult:
        result = ParseResult(provider=self.name, fetched_at=fetched_at)
        payloads, failed = self.split_failed_calls(payloads)
        for payload in payloads:
            for row in _quota_set(payload):  # a format error for anything but an answer
                _Row(self.currency, result).parse(row)
        result.skip_failed(failed)
        return result


def _gpu_rows_only(data: Any) -> dict[str, Any]:
    """The answer with its CPU-only rows dropped (the documented shape, fewer rows)."""
    rows = _quota_set(data)
    response = dict(data["Response"])
    response["InstanceTypeQuotaSet"] = [row for row in rows if _has_gpu(row)]
    return {"Response": response}


# --- one InstanceTypeQuotaItem -----------------------------------------------------------

_ZONE = re.compile(r"^(?P<region>[a-z]+(?:-[a-z]+)+)-\d+$")


@dataclasses.dataclass(frozen=True, slots=True)
class _Price:
    term: RentalTerm
    amount: Decimal
    unit: PriceUnit
    #: the price quoted to the calling account where it differs from the list price
    account: bool = False


def _list_and_account(
    term: RentalTerm, unit: PriceUnit, listed: Decimal | None, quoted: Decimal | None
) -> list[_Price]:
    """The list price, and the account's quote where it differs (marked): both, one or none.

    Without a list price the quote is the only figure and stays unmarked, as before a
    discount can be told apart from it.
    """
    if listed is None:
        return [] if quoted is None else [_Price(term, quoted, unit)]
    prices = [_Price(term, listed, unit)]
    if quoted is not None and quoted != listed:
        prices.append(_Price(term, quoted, unit, account=True))
    return prices


@dataclasses.dataclass(frozen=True, slots=True)
class _Row:
    """Turns one ``InstanceTypeQuotaItem`` into offers, one per term it prices."""

    currency: str
    result: ParseResult

    def parse(self, row: Any) -> None:
        if not isinstance(row, Mapping):
            self.result.skip("InstanceTypeQuotaSet entry is not an object", "tencent:row")
            return
        itype = str(row.get("InstanceType") or "").strip()
        zone = str(row.get("Zone") or "").strip()
        charge_type = str(row.get("InstanceChargeType") or "").strip()
        ref = f"tencent:{zone or '?'}/{itype or '?'}/{charge_type or '?'}"
        if not itype or not zone:
            self.result.skip("row without InstanceType or Zone", ref)
            return
        match = _ZONE.match(zone)
        if match is None:
            self.result.skip(f"not a zone name: {zone!r}", ref)
            return
        region = match["region"]
        gpus = self._gpus(row, ref)
        if gpus is None:
            return
        prices = self._prices(charge_type, row.get("Price"), ref)
        if not prices:
            return
        fields = _fields(row, itype, zone, region, gpus)
        for price in prices:
            priced: OfferFields = {
                **fields,
                "price_amount": price.amount,
                "price_currency": self.currency,
                "price_unit": price.unit,
                "price_basis": PriceBasis.INSTANCE,
                "term": price.term,
                "prepaid": price.term.is_commitment,
            }
            if price.account:
                priced["term_variant"] = f"{zone} ({ACCOUNT_PRICE_VARIANT})"
            self.result.add(ref, **priced)

    def _gpus(self, row: Mapping[str, Any], ref: str) -> tuple[int, float | None] | None:
        """``(gpu_count, gpu_fraction)`` from ``GpuCount`` (physical cards), or None (skipped).

        ``Gpu`` alone is not used: the docs call it the GPU count here and "GPU cores"
        elsewhere, and it cannot tell a vGPU slice from a whole card.
        """
        try:
            count = to_float(row.get("GpuCount"))
        except ValueError:
            self.result.skip(f"GpuCount is not a number: {row.get('GpuCount')!r}", ref)
            return None
        if count is None or count <= 0:
            gpu = lenient_float(row.get("Gpu"))
            reason = "no GpuCount (GPU type)" if gpu is not None and gpu > 0 else "no GPU"
            self.result.skip(reason, ref)
            return None
        if count > 1 and count != int(count):
            self.result.skip(f"GpuCount {count} is not a whole number of GPUs", ref)
            return None
        return gpu_share(count)

    def _prices(self, charge_type: str, raw: Any, ref: str) -> list[_Price]:
        """The prices a row's billing mode gives (see the module docstring), or [] (skipped)."""
        if not isinstance(raw, Mapping):
            self.result.skip("row without a Price object", ref)
            return []
        try:
            if charge_type in ("POSTPAID_BY_HOUR", "SPOTPAID"):
                return self._hourly(charge_type, raw, ref)
            if charge_type == "PREPAID":
                return self._prepaid(raw, ref)
        except ValueError as exc:
            self.result.skip(f"price is not a number: {exc}", ref)
            return []
        self.result.skip(f"billing mode {charge_type or '(none)'!r} is not priced", ref)
        return []

    def _hourly(self, charge_type: str, raw: Mapping[str, Any], ref: str) -> list[_Price]:
        unit = raw.get("ChargeUnit")
        if unit not in (None, "HOUR"):
            self.result.skip(f"hourly price with ChargeUnit {unit!r}", ref)
            return []
        discounted = positive_decimal(raw.get("UnitPriceDiscount"))
        if charge_type == "SPOTPAID":
            if discounted is None:
                self.result.skip("no spot price (UnitPriceDiscount)", ref)
                return []
            return [_Price(RentalTerm.INTERRUPTIBLE, discounted, PriceUnit.HOUR)]
        listed = positive_decimal(raw.get("UnitPrice"))
        prices = _list_and_account(RentalTerm.ON_DEMAND, PriceUnit.HOUR, listed, discounted)
        if not prices:
            self.result.skip("no hourly price (UnitPriceDiscount / UnitPrice)", ref)
        return prices

    def _prepaid(self, raw: Mapping[str, Any], ref: str) -> list[_Price]:
        prices = []
        for term, unit, suffix in (
            (RentalTerm.COMMIT_1MO, PriceUnit.MONTH, ""),
            (RentalTerm.COMMIT_1Y, PriceUnit.TERM, "OneYear"),
            (RentalTerm.COMMIT_3Y, PriceUnit.TERM, "ThreeYear"),
        ):
            listed = positive_decimal(raw.get(f"OriginalPrice{suffix}"))
            discounted = positive_decimal(raw.get(f"DiscountPrice{suffix}"))
            prices.extend(_list_and_account(term, unit, listed, discounted))
        if not prices:
            self.result.skip("no prepaid price (DiscountPrice / OriginalPrice)", ref)
        return prices


def _fields(
    row: Mapping[str, Any], itype: str, zone: str, region: str, gpus: tuple[int, float | None]
) -> OfferFields:
    """The fields every price of one row shares: the type, zone, GPU (``gpus``: count and
    fraction) and hardware."""
    gpu_count, fraction = gpus
    family_name = str(row.get("InstanceFamily") or itype.split(".", 1)[0]).strip()
    family = gpu_families().get(family_name) or _families_folded().get(family_name.casefold())
    type_name = str(row.get("TypeName") or "").strip()
    cpu_type = str(row.get("CpuType") or "").strip()
    status = row.get("Status")
    gpu: OfferFields = {"gpu_raw_name": type_name or family_name or None}
    if family is not None:
        board_gb = nominal_gpu_memory_gb(family.memory_gb)
        gpu = gpu_fields(family.gpu_raw_name, memory_gb=board_gb)
        # a vGPU slice gets its share of the card (GN7.LARGE20: 1/4 T4 = 4 GB)
        gpu["gpu_memory_gb"] = board_gb * fraction if fraction else board_gb
    return {
        "offer_id": itype,
        "term_variant": zone,
        "instance_name": f"{itype} ({type_name}, {zone})" if type_name else f"{itype} ({zone})",
        "region": region,
        "country": region_countries().get(region),
        "gpu_count": gpu_count,
        "gpu_fraction": fraction,
        **gpu,
        "vcpus": positive_quantity(row.get("Cpu")),
        "ram_gb": positive_quantity(row.get("Memory")),  # documented in GB
        "cpu_model": cpu_type or None,
        "cpu_vendor": cpu_vendor(cpu_type),
        "available_now": {"SELL": True, "SOLD_OUT": False}.get(str(status)),
    }
