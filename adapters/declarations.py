"""What each provider adapter declares about itself, readable without importing it.

Each adapter class says who it is (``name``), which settings it reads (its credentials,
``credential_names`` and ``optional_credential_names``, and its :class:`ProviderSetting`
declarations, ``other_settings``) and the base URL of its API (``base_url``). The registry,
the settings (one field per declared setting, a ``<name>_base_url`` per HTTP provider),
``gpuscout providers`` and the provider docs all read those declarations, so adding a
provider touches ``adapters/`` and its tests alone.

Importing every adapter costs what a warm ``gpuscout offers`` must not pay (the HTTP client,
botocore, thirty modules), so what the settings and the registry need is written once to
``adapters/data/providers.json`` (:func:`write_manifest`, with the provider docs by ``python -m
gpuscout.service.provider_docs``) and read from there (:func:`declared`). The file is derived,
never edited: :func:`stale_entries` compares it with the classes (a test does, and
:func:`adapters.registry` refuses a class that differs from its entry), so it cannot drift.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import json
import sys
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Adapter

__all__ = [
    "ACTIVE",
    "MANIFEST",
    "Declaration",
    "Lifecycle",
    "LifecycleState",
    "ProviderSetting",
    "declaration_of",
    "declared",
    "discover",
    "retired_providers",
    "stale_entries",
    "write_manifest",
]

#: The manifest of every provider's declarations, beside the adapters' other data files.
MANIFEST = "data/providers.json"
#: How the manifest is made again (said in its header and in every error about it).
REGENERATE = "uv run python -m gpuscout.service.provider_docs"


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderSetting:
    """One setting a provider's adapter reads: ``GPUSCOUT_<NAME>`` in the environment.

    ``secret``: a credential (its value never shown); ``required``: the provider is skipped
    while it is unset; ``choices``: the only values allowed (checked when the settings are
    read); ``default``: the value when unset; ``paths``: a list of file paths, written
    ``a,b`` or as a JSON list.
    """

    name: str
    description: str
    secret: bool = False
    required: bool = False
    choices: tuple[str, ...] = ()
    default: str | None = None
    paths: bool = False

    @property
    def env_name(self) -> str:
        return f"GPUSCOUT_{self.name.upper()}"

    def to_json(self) -> dict[str, Any]:
        """Its fields, those at their default left out (the manifest stays readable)."""
        data = dataclasses.asdict(self)
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in data.items()
            if key in ("name", "description") or value != _SETTING_DEFAULTS[key]
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProviderSetting:
        return cls(**{**data, "choices": tuple(data.get("choices", ()))})


#: The defaults of :class:`ProviderSetting`'s optional fields.
_SETTING_DEFAULTS = {
    f.name: f.default for f in dataclasses.fields(ProviderSetting) if f.name != "name"
}


class LifecycleState(enum.StrEnum):
    """Whether a provider still sells what its adapter reads."""

    ACTIVE = "active"
    DEPRECATED = "deprecated"
    """still fetched, but the provider (or the API the adapter calls) announced its end"""
    RETIRED = "retired"
    """gone: never fetched by default, its offers never ranked, none in the sample"""


@dataclasses.dataclass(frozen=True, slots=True)
class Lifecycle:
    """A provider's :class:`LifecycleState`, and for any other than active the day it took
    effect (``since``, ISO ``YYYY-MM-DD``), what happened (``reason``) and where that is
    recorded (``source``): a provider is never called gone on no evidence."""

    state: LifecycleState = LifecycleState.ACTIVE
    since: str | None = None
    reason: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if self.state is not LifecycleState.ACTIVE and not (
            self.since and self.reason and self.source
        ):
            raise ValueError(f"a {self.state.value} provider needs since, reason and source")

    @property
    def retired(self) -> bool:
        return self.state is LifecycleState.RETIRED

    def text(self) -> str:
        """In a few words for people: ``active``, or ``retired 2026-03-31: <reason>``."""
        if self.state is LifecycleState.ACTIVE:
            return self.state.value
        return f"{self.state.value} {self.since}: {self.reason} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lifecycle:
        return cls(**{**data, "state": LifecycleState(data.get("state", "active"))})


#: The lifecycle of a provider that still sells what its adapter reads.
ACTIVE = Lifecycle()


@dataclasses.dataclass(frozen=True, slots=True)
class Declaration:
    """One provider as its adapter declares it: its module under ``adapters/``, its name,
    every setting it reads, the documented base URL of its API (``""``: no HTTP) and where
    to rent its offers (``rent_url``, a template, and ``pricing_url``: :mod:`adapters.rent`)."""

    module: str
    name: str
    title: str
    base_url: str
    settings: tuple[ProviderSetting, ...]
    lifecycle: Lifecycle = ACTIVE
    rent_url: str = ""
    pricing_url: str = ""

    @property
    def base_url_setting(self) -> str | None:
        """``<name>_base_url``, the setting that points an HTTP adapter elsewhere."""
        return f"{self.name}_base_url" if self.base_url else None

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "name": self.name,
            "title": self.title,
            "base_url": self.base_url,
            "settings": [s.to_json() for s in self.settings],
            **({"lifecycle": self.lifecycle.to_json()} if self.lifecycle != ACTIVE else {}),
            "rent_url": self.rent_url,
            "pricing_url": self.pricing_url,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Declaration:
        return cls(
            module=data["module"],
            name=data["name"],
            title=data["title"],
            base_url=data["base_url"],
            settings=tuple(ProviderSetting.from_json(s) for s in data["settings"]),
            lifecycle=Lifecycle.from_json(data["lifecycle"]) if "lifecycle" in data else ACTIVE,
            rent_url=data.get("rent_url", ""),
            pricing_url=data.get("pricing_url", ""),
        )


def credential_setting(name: str, title: str, *, required: bool) -> ProviderSetting:
    """The declaration of a credential an adapter names in ``credential_names`` (required)
    or ``optional_credential_names``."""
    what = (
        f"credential of {title}; unset: {title} is skipped"
        if required
        else f"credential of {title}, optional: used when set"
    )
    return ProviderSetting(name=name, description=what, secret=True, required=required)


def declaration_of(cls: type[Adapter]) -> Declaration:
    """What the adapter class ``cls`` declares, as the manifest writes it."""
    settings = (
        *(credential_setting(n, cls.title, required=True) for n in cls.credential_names),
        *(credential_setting(n, cls.title, required=False) for n in cls.optional_credential_names),
        *cls.other_settings,
    )
    return Declaration(
        module=cls.__module__.rsplit(".", 1)[-1],
        name=cls.name,
        title=cls.title,
        base_url=cls.base_url,
        settings=settings,
        lifecycle=cls.lifecycle,
        rent_url=cls.rent_url,
        pricing_url=cls.pricing_url,
    )


@functools.cache
def declared() -> tuple[Declaration, ...]:
    """Every provider's declaration, in name order, from the manifest (no adapter imported).

    A manifest that cannot be read is a ValueError saying how to make it again.
    """
    text = resources.files(__package__ or "adapters").joinpath(MANIFEST).read_text("utf-8")
    try:
        return tuple(Declaration.from_json(p) for p in json.loads(text)["providers"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"adapters/{MANIFEST} is broken ({exc!r}); run {REGENERATE}") from None


def retired_providers() -> frozenset[str]:
    """The providers whose adapters declare them retired (:class:`Lifecycle`), from the
    manifest: their offers are never ranked, wherever they were stored or recorded."""
    return frozenset(d.name for d in declared() if d.lifecycle.retired)


def discover() -> tuple[type[Adapter], ...]:
    """Every provider's adapter class, found by importing each module of ``adapters/``: the
    concrete :class:`~adapters.base.Adapter` subclasses a module defines with a ``name`` of
    their own (a shared base, such as a price list's, declares none), in name order."""
    import inspect
    import pkgutil

    from .base import Adapter

    package = sys.modules[__package__ or "adapters"]
    found: list[type[Adapter]] = []
    for module_info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        found += [
            cls
            for cls in vars(module).values()
            if isinstance(cls, type)
            and issubclass(cls, Adapter)
            and cls.__module__ == module.__name__
            and "name" in vars(cls)
            and not inspect.isabstract(cls)
        ]
    return tuple(sorted(found, key=lambda cls: cls.name))


def manifest_text(declarations: Iterable[Declaration]) -> str:
    """The manifest's JSON text for ``declarations``."""
    document = {
        "about": f"Generated from each adapter class by `{REGENERATE}`; do not edit.",
        "providers": [d.to_json() for d in declarations],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def stale_entries(
    classes: Sequence[type[Adapter]], entries: Sequence[Declaration] | None = None
) -> list[str]:
    """What differs between the adapter ``classes`` and the manifest's ``entries`` (default:
    the shipped one), one line per provider; empty when the manifest is current."""
    entries = declared() if entries is None else entries
    written = {e.name: e for e in entries}
    actual = {cls.name: declaration_of(cls) for cls in classes}
    lines = [f"{n}: not in adapters/{MANIFEST}" for n in actual if n not in written]
    lines += [
        f"{n}: in adapters/{MANIFEST}, no adapter declares it" for n in written if n not in actual
    ]
    lines += [
        f"{n}: adapters/{MANIFEST} differs from adapters.{actual[n].module}"
        for n in actual
        if n in written and written[n] != actual[n]
    ]
    return lines


def write_manifest(path: Path | None = None) -> Path:
    """Write the manifest from the adapter classes (:func:`discover`); return its path."""
    target = path or Path(__file__).with_name("data") / "providers.json"
    target.write_text(manifest_text(declaration_of(cls) for cls in discover()), "utf-8")
    return target
