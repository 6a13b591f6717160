"""Sweep history (SPEC 12): recorded sweeps, baselines, comparisons and trends in a SQL database.

    engine.py     the URL (--history, FARM_HISTORY_URL, default SQLite), engine, migrations on open
    tables.py     the schema (SQLAlchemy Core); migrations/ holds its Alembic revisions
    record.py     a finished SweepReport → rows, once per sweep id
    store.py      HistoryStore: record, find (last, tags, prefixes), baselines, kept comparisons
    inbox.py      a SQLite history's inbox: farm test leaves its sweep there, every open records it
    trends.py     pass rates of cases over sweeps, sparklines, class changes
    facts.py      what a sweep records besides its report: git, suite hashes, tags, settings
    refs.py       BASE/HEAD of ``farm compare``: sweep id, last, last:k=v, baseline, JSON report
    session.py    ``farm test``'s history: record, --baseline gating, --order failing-first
    nightly.py    the nightly loop: record, compare with the last nightly and the baseline, notify
    worker.py     the hook the ``farm.report`` task calls on a worker with FARM_HISTORY_URL
    modes.py      ``farm assess``'s known failure modes per case (a ``farm.assess.ModeMemory``)

Nothing in the pure core (models, suites, checks, stats, reports, execute) imports this package:
SQLAlchemy stays out of it.
"""
