"""Price alerts: tell a subscriber the moment a qualifying offer gets cheap
enough, comes into stock, or drops well below its 7-day median.

* :mod:`.condition`: the condition of an alert and when it holds / re-arms (pure)
* :mod:`.evaluate`: after each snapshot, one costing per distinct search, then each alert's
  crossing (fire once, re-arm past a hysteresis band, a quiet period)
* :mod:`.message`: the alert mail (the digest's mail path)
* :mod:`.webhooks`: signed webhook calls (HMAC-SHA256), retries, the URL check
* :mod:`.deliver`: each firing's mail and webhook calls, exactly once (the digest's
  delivery protocol)
* :mod:`.manager`: creating an alert (the digest's double opt-in), its firings
* :mod:`.run`: one evaluation and delivery run (the scheduler's hook)

An alert is a subscription of kind ``alert`` (:mod:`db.alerts`): confirming and
unsubscribing are the digest's links and pages. Submodules are imported on use.
"""

__all__: list[str] = []
