"""The view's fixtures: ``farm view`` servers started by a test and stopped after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.farm_view import ViewServers


@pytest.fixture()
def view_servers() -> Iterator[ViewServers]:
    servers = ViewServers()
    yield servers
    servers.stop_all()
