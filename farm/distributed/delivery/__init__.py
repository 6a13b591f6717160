"""End-to-end delivery owned by the farm (SPEC 11): a distributed sweep finishes without its submitter.

The broker may lose a message (Kombu's Redis transport pops a message before it records it as
unacknowledged: a worker killed in between takes it along), and a submitter may die while
publishing. The farm does not trust either: it stores the plan and a publish cursor before the
first message (``publish``), and reconciles what is settled against what was planned
(``reconcile``): runs neither settled nor running within their lease are published again
(counted once however often they run), a sweep whose publisher vanished is published to the
end by whoever notices, and a stopped sweep is closed with what ran.
"""
