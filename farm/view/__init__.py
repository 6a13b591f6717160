"""``farm view``: a read-only local web app over the sweep history and the sweeps in flight."""
