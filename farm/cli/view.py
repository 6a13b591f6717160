"""``farm view``: serve the history (and the distributed sweeps in flight) to a browser, read-only."""

from __future__ import annotations

import os

import click

from farm.cli.options import StrictCommand
from farm.cli.run import run_command, warn

__all__ = ["view"]


def serve(address: str, port: int, history: str | None, broker: str | None) -> int:
    from aiohttp import web

    from farm.history.location import history_url
    from farm.history.store import HistoryStore
    from farm.settings import safe_url
    from farm.view.app import build_app, credentials_for
    from farm.view.data import ViewData

    credentials = credentials_for(address)  # before anything opens: a public address needs auth
    url = history_url(history)
    HistoryStore.open(url, tell=warn).close()  # a history that cannot be opened is reported now (exit 2 or 3)
    app = build_app(ViewData(url, broker, tell=warn), credentials=credentials,
                    flower_url=os.environ.get("FARM_FLOWER_URL"))
    where = f"http://{address}:{port}/" if ":" not in address else f"http://[{address}]:{port}/"
    click.echo(f"farm view: {where} (history {safe_url(url)}"
               f"{f', sweeps in flight on {safe_url(broker)}' if broker else ''}); Ctrl-C stops it", err=True)
    if credentials is not None:
        click.echo("farm view: plain HTTP, so the basic auth crosses the network in clear: put TLS in front "
                   "(a reverse proxy) on an address that is not loopback", err=True)
    web.run_app(app, host=address, port=port, print=None, access_log=None)
    return 0


@click.command(cls=StrictCommand)
@click.option("--address", default="127.0.0.1", show_default=True,
              help="Address to listen on; any but a loopback address requires FARM_VIEW_USER and FARM_VIEW_PASSWORD "
                   "(HTTP basic auth).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port to listen on.")
@click.option("--history", envvar="FARM_HISTORY_URL", default=None, metavar="URL",
              help="History database (SQLAlchemy URL). Env: FARM_HISTORY_URL; default the SQLite file in "
                   "FARM_DATA_DIR.")
@click.option("--broker", envvar="FARM_BROKER_URL", default=None, metavar="URL",
              help="Also show the distributed sweeps in flight on this broker. Env: FARM_BROKER_URL.")
def view(address: str, port: int, history: str | None, broker: str | None) -> None:
    """Browse recorded sweeps, their reports, comparisons and case trends in a local web app (read-only)."""
    run_command(lambda: serve(address, port, history, broker))
