"""farm.redis_transport: kombu's Redis transport with one client per channel, on a real Redis."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kombu import Connection, Exchange, Queue

from farm.celery_config import REDIS_TRANSPORT, celery_settings


def test_redis_brokers_get_the_farms_transport_and_others_kombus() -> None:
    assert celery_settings("redis://127.0.0.1:6379/0")["broker_transport"] == REDIS_TRANSPORT
    tls = "rediss://127.0.0.1:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/ssl/ca.pem"
    assert "broker_transport" not in celery_settings(tls)  # kombu reads TLS defaults from the scheme
    rabbitmq = {"FARM_BROKER_URL": "amqp://guest:guest@127.0.0.1:5672//", "FARM_STORE_URL": "redis://127.0.0.1/0"}
    assert "broker_transport" not in celery_settings(env=rabbitmq)


@pytest.mark.redis
def test_messages_reserved_and_acknowledged_from_many_threads_reuse_one_client(redis_server: str,
                                                                               redis_client: Any) -> None:
    queue = Queue("farm-transport", Exchange("farm-transport"), routing_key="farm-transport")
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        channel = connection.default_channel
        assert type(channel).__module__ == "farm.redis_transport"
        with connection.Producer(channel) as producer:
            for n in range(40):
                producer.publish({"n": n}, exchange=queue.exchange, routing_key="farm-transport", declare=[queue])
        received: list[Any] = []
        clients: set[int] = set()

        def ack(message: Any) -> None:  # acknowledged from another thread, as a threads pool does
            clients.add(id(channel._create_client()))
            message.ack()

        with connection.Consumer(queue, callbacks=[lambda body, message: received.append(message)],
                                 channel=channel, accept=["json"]):
            while len(received) < 40:
                connection.drain_events(timeout=5)
        threads = [threading.Thread(target=ack, args=(message,)) for message in received]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(m.payload["n"] for m in received) == list(range(40))
        assert len(clients) == 1
        assert redis_client.hlen("unacked") == 0 and redis_client.zcard("unacked_index") == 0
        shared = channel._create_client()
        channel._pool = None  # what kombu does when it reconnects: the next client uses the new pool
        renewed = channel._create_client()
        assert renewed is not shared and renewed.connection_pool is channel.pool
