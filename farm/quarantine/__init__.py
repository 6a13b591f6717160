"""Quarantine with evidence and an expiry (SPEC 18): a quarantined case runs and is reported but
never sets the exit code until its ``until`` date has passed.

``entries`` reads ``farm-quarantine.toml`` files; ``marks`` (pure) marks a report's cases and
says which still gate; ``evidence`` reads the history for ``farm quarantine suggest|review``.
"""
