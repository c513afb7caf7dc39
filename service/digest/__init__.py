"""The weekly email digest: subscriptions, a pure builder, the SMTP path, exactly-once delivery.

* :mod:`.build`: :func:`build_digest`, pure (offers, changes, index, links, now -> Digest)
* :mod:`.chart`: the price-index PNG (matplotlib Agg)
* :mod:`.tokens`: signed, expiring confirm / unsubscribe tokens
* :mod:`.mail`: MIME assembly (header-injection safe) and SMTP sending with retries
* :mod:`.delivery`: one (subscription, ISO week) row, claimed -> sending -> sent
* :mod:`.compose`: gathering a digest's inputs from the database
* :mod:`.subscriptions`: subscribe / confirm / unsubscribe, shared by the API and the CLI
* :mod:`.limits`: the per-address, per-client and global quotas of confirmation mails
* :mod:`.saved_search`: a subscription's requirement and job to JSON and back, strictly
* :mod:`.schedule`: the hourly APScheduler job

Submodules are imported on use: importing this package loads neither matplotlib nor
SQLAlchemy.
"""

__all__: list[str] = []
