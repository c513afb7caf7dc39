"""Crusoe Cloud: GPU prices from the price list Crusoe publishes on its pricing page.

Crusoe's API (signed requests with an account) lists instance types and capacity but no
prices; dstackai/gpuhunt's collector takes Crusoe's prices from its pricing page too. So
Crusoe's prices are that page, captured on a known day (``data/crusoe_prices.yaml``, each entry
quoting the page's line; :mod:`adapters.price_list`): one on-demand offer per GPU model, priced
per GPU-hour, with no vCPU or RAM figure (the page gives none).
"""

from __future__ import annotations

from typing import ClassVar

from .price_list import PublishedPriceList

__all__ = ["CrusoeAdapter"]


class CrusoeAdapter(PublishedPriceList):
    """Crusoe's published on-demand price per GPU-hour, one offer per GPU model."""

    name: ClassVar[str] = "crusoe"
    title: ClassVar[str] = "Crusoe Cloud"
    price_file: ClassVar[str] = "crusoe_prices.yaml"
