"""The fleet-control flags of ``farm test`` (SPEC 13), read back by ``FleetFlags.from_flags``.

The values are checked where the sweep is prepared (``FleetFlags.parsed``, then
``farm.fleet.keys.plan_fleet``), so a bad
one is exit 2 naming the flag, from the command line and the Python API alike.
"""

from __future__ import annotations

from typing import Any

import click

from farm.defaults import PRICES_ENV, SPRT_ALPHA, SPRT_BETA, SPRT_ZONE


def fleet_flags(command: Any) -> Any:
    """Decorate ``farm test`` with the fleet-control flags."""
    options = [
        click.option("--rate-limit", "rate_limits", multiple=True, metavar="KEY=SPEC[,SPEC…]",
                     help="Shared rate limit of an agent, connector or judge (KEY, or * for every other key): "
                          "N/s, N/m (requests), Ntok/m (tokens), Nconc (in flight); repeatable. Wins over the "
                          "rate_limit of package.yao / *.conn.yao. Distributed: shared by every worker."),
        click.option("--budget", type=float, default=None, metavar="USD",
                     help="Stop scheduling once the next call could take the sweep past USD (agent and judge "
                          f"calls; prices from the bundled table and {PRICES_ENV}); report stopped: budget, "
                          "exit 4. An agent or judge without a price is exit 2."),
        click.option("--max-tokens", type=int, default=None, metavar="N",
                     help="The same for tokens (input + output, agent and judges)."),
        click.option("--adaptive", type=click.Choice(["exact", "sequential"]), is_flag=False, flag_value="exact",
                     default=None,
                     help="Stop a case's runs once its verdict is settled. --adaptive (exact): at k passes or "
                          "R-k+1 failures, so the verdict is the full sweep's; --adaptive=sequential: an SPRT "
                          "(see --sprt), whose inconclusive verdict counts as failed. Pass rates of such cases "
                          "are biased by stopping and marked adaptive."),
        click.option("--sprt", default=None, metavar="P0,P1,ALPHA,BETA",
                     help="The sequential test's hypotheses and error rates: pass when p >= P1, fail when p <= "
                          "P0, wrongly passing at P0 with chance ALPHA, wrongly failing at P1 with chance BETA. "
                          f"Default: P1 = the case's required pass rate, P0 = P1 - {SPRT_ZONE:g}, ALPHA "
                          f"{SPRT_ALPHA:g}, BETA {SPRT_BETA:g}."),
        click.option("--record", default=None, metavar="DIR",
                     help="Record every agent and judge call into DIR (secrets masked), to replay later."),
        click.option("--replay", default=None, metavar="DIR",
                     help="Replay the calls recorded in DIR: no agent or judge is called; same verdicts."),
        click.option("--max-queue-wait", default=None, metavar="DURATION",
                     help="Longest a call waits for a slot of a rate limit, concurrency cap or budget (default "
                          "10m; the wait is outside every timeout and duration_ms). A run whose first call waited "
                          "longer did not run; a later call: an error run (harness:queue_wait)."),
        click.option("--no-judge-cache", is_flag=True,
                     help="Ask the judge for every run, even about an output it already judged."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


__all__ = ["fleet_flags"]
