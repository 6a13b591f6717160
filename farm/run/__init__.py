"""One run of one case: its turns under timeouts (``execute``, never raises), the sweep's settings it
runs under and the identity agents see (``environment``), the dynamic loop with its simulators, and
the run's clock of the time its calls queued for fleet control (``waiting``: the run's timeouts stop
while it waits). A run's failure class is data: ``farm.models.failure_class``.
"""
