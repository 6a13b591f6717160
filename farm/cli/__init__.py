"""The ``farm`` command line: one module per command group, all ending in ``run_command``.

    main.py     the ``farm`` group, which gathers the commands below
    run.py      run_command: a body's exit code, or FarmError → exit code (SPEC 10's table)
    test.py     farm test (with options.py: strict flags, rates; signals.py: Ctrl-C and SIGTERM)
    report.py   farm report: any format from a run journal or a distributed sweep
    worker.py   farm worker
    sweeps.py   farm results, cancel, status, flower (distributed sweeps)
    history.py  farm compare, history, baseline (sweep history, SPEC 12)
"""

from farm.cli.main import main

__all__ = ["main"]
