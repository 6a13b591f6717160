"""Quarantine with evidence and an expiry (SPEC 18): a quarantined case runs and is reported but
never sets the exit code until its ``until`` date has passed.

``files`` says where a suite's ``farm-quarantine.toml`` is (every ``farm test`` asks; the rest loads
only when there is one); ``entries`` reads those files; ``plan`` gives a sweep's plan its entries; the
history's ``quarantine_evidence`` reads the evidence for ``farm quarantine suggest|review``. A
report's marks (which cases still gate) are data the aggregation sets: ``farm.models.quarantine``.
"""
