"""``farm test --estimate`` (SPEC 18): what a sweep will cost before it runs.

``spend`` (pure) reads what a finished sweep spent per run (recorded with it in the history);
``basis`` finds that figure for a prepared sweep, from the history of the same suite or else from
one probe run per distinct agent; ``forecast`` (pure) scales it to the planned sweep.
"""
