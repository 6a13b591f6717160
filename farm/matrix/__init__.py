"""Matrix sweeps (SPEC 22): every case in every arm, the arms' runs interleaved, each arm judged
against the baseline arm. ``arms`` reads the arms; ``schedule`` orders the runs; ``report`` splits
a finished sweep's report into its arms and verdicts. Pure: no Celery, Redis or SQLAlchemy."""
