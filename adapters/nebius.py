"""Nebius AI Cloud: GPU prices from the price list Nebius publishes on nebius.com/prices.

Nebius's price calculator is a gRPC service reached with an account (as gpuhunt's and
SkyPilot's collectors call it; ``tests/fixtures/nebius``), which gpuscout's HTTP client does
not speak. Its public page lists the on-demand price of each GPU with the vCPUs and RAM that
come with it, so Nebius's prices are that page, captured on a known day
(``data/nebius_prices.yaml``, each entry quoting the page's line; :mod:`adapters.price_list`):
one offer per GPU, priced per GPU-hour. The page's "from" prices (L40S, preemptible) are lower
bounds and are left out, as the file says.
"""

from __future__ import annotations

from typing import ClassVar

from .price_list import PublishedPriceList

__all__ = ["NebiusAdapter"]


class NebiusAdapter(PublishedPriceList):
    """Nebius's published on-demand price per GPU-hour, one offer per GPU model."""

    name: ClassVar[str] = "nebius"
    title: ClassVar[str] = "Nebius AI Cloud"
    price_file: ClassVar[str] = "nebius_prices.yaml"
