"""The published catalog: one collector's current offers as signed static files, and the
reading of another instance's catalog (following it).

:mod:`.offers_file` turns offers into one Parquet file per provider and back,
:mod:`.manifest` and :mod:`.signing` describe and sign what a catalog holds,
:mod:`.publish` writes a catalog atomically from the database, :mod:`.follow` reads one by
URL or path, checks it and turns it into provider runs a snapshot stores.
"""
