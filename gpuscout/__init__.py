"""gpuscout: where to rent GPU compute for the least money per unit of real work.

The one import name of an installed gpuscout. Its four packages sit at the top of the
repository (``adapters/``, ``pricing/``, ``db/``, ``service/``); ``gpuscout/`` links to them,
so a checkout, an editable install and a built wheel all import them as ``gpuscout.<name>``
(ARCHITECTURE.md, "Packaging").
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpuscout")
except PackageNotFoundError:  # a checkout read without installing it
    __version__ = "0+unknown"

__all__ = ["__version__"]
