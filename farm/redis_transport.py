"""kombu's Redis transport, with one client per channel instead of one per message.

kombu (5.7) builds a new ``redis.Redis`` client, whose constructor copies redis-py's response
callbacks (about 200) into a case-insensitive dict, each time a worker reserves a message
(``QoS.append``) and each time it acknowledges one (``QoS.ack``): 7.6 % of a farm worker's time
holding the GIL at 300 runs/s (py-spy ``--gil``, 2026-11-23). A redis-py client may be shared
between threads (it takes a connection from its pool for each command; a pipeline is made per
use), so each channel keeps one for its synchronous commands, made again when its pool changes
(kombu drops the pool when it reconnects). Everything else is kombu's.

``farm.celery_config.REDIS_TRANSPORT`` selects it for ``redis://`` brokers; ``rediss://`` (kombu reads its TLS
defaults from the URL's scheme) and ``unix://`` keep kombu's own.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _shared_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's own client (BRPOP), made once by kombu
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        client = self._shared_client
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = super()._create_client()  # type: ignore[no-untyped-call]
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel


__all__ = ["Channel", "Transport"]
