"""The wall: everything that talks to Redis, Celery or kombu. ``submit`` ships a sweep to workers and streams it
back; ``supervise`` and ``orphans`` keep worker processes; ``store/`` holds sweeps in Redis, ``delivery/``
publishes and reconciles runs, ``broker/`` configures Celery and its transport, ``fleet/`` shares fleet
control between workers.
"""
