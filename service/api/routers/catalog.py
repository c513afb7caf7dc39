"""``GET /v1/catalog/...``: the catalog this instance published (``publish_dir``), served
as static files so any instance is also a mirror other instances can follow.

``manifest.json`` changes with each publication: it is cached for ``cache_max_age_s``
and revalidated by its ETag (304). A version's files never change once written (a new
publication is a new version directory), so they are cached for a year, immutable.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.exceptions import HTTPException

from ...catalog.manifest import MANIFEST_NAME
from ..deps import SettingsDep
from ..problems import problem_responses

__all__ = ["router"]

router = APIRouter(prefix="/v1/catalog", tags=["catalog"])

_VERSION = re.compile(r"^\d{8}T\d{12}Z$")
_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(parquet|json)$")
#: A version's files never change: a year, immutable.
_IMMUTABLE = "public, max-age=31536000, immutable"


@functools.lru_cache(maxsize=1024)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    """The SHA-256 of a file, remembered while its mtime and size stay the same."""
    with open(path, "rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()


def _serve(request: Request, path: Path, cache_control: str, media_type: str) -> Response:
    try:
        stat = path.stat()
        etag = f'"{_digest(str(path), stat.st_mtime_ns, stat.st_size)}"'
    except OSError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such catalog file here") from None
    headers = {"ETag": etag, "Cache-Control": cache_control}
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
    return Response(path.read_bytes(), media_type=media_type, headers=headers)


def _root(settings: SettingsDep) -> Path:
    if settings.publish_dir is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "this instance publishes no catalog (GPUSCOUT_PUBLISH_DIR is not set)",
        )
    return settings.publish_dir


#: What a catalog route may answer besides its file: unchanged (304), or not here (404).
_RESPONSES: dict[int | str, dict[str, Any]] = {
    304: {"description": "not modified: the If-None-Match ETag is current"},
    **problem_responses(404, _404="no catalog published here, or no such file in it"),
}


@router.get(f"/{MANIFEST_NAME}", summary="The catalog's signed manifest", responses=_RESPONSES)
async def manifest(request: Request, settings: SettingsDep) -> Response:
    """The newest catalog version's manifest, signed (Ed25519) by the publisher."""
    cache = f"public, max-age={settings.cache_max_age_s}"
    return _serve(request, _root(settings) / MANIFEST_NAME, cache, "application/json")


@router.get("/{version}/{name}", summary="One file of a catalog version", responses=_RESPONSES)
async def catalog_file(
    version: str, name: str, request: Request, settings: SettingsDep
) -> Response:
    """A provider's Parquet file (or the version's manifest) of a kept catalog version."""
    if not _VERSION.match(version) or not _NAME.match(name):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such catalog file here")
    media = "application/json" if name.endswith(".json") else "application/vnd.apache.parquet"
    return _serve(request, _root(settings) / version / name, _IMMUTABLE, media)
