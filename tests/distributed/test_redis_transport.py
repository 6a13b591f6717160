"""farm.distributed.broker.transport: kombu's Redis transport with one client per channel, on a real Redis."""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

import pytest
from kombu import Connection, Exchange, Queue

from farm.distributed.broker.celery_config import REDIS_TRANSPORT, celery_settings
from farm.distributed.broker.transport import ACK_BATCH, ACK_WAIT_S, SHARE


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
        assert type(channel).__module__ == "farm.distributed.broker.transport"
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
        # acknowledged at once (the prefetch room is free), out of Redis together at the next read
        assert redis_client.hlen("unacked") == 40
        channel.qos.flush_acks()  # what the next read does
        assert redis_client.hlen("unacked") == 0 and redis_client.zcard("unacked_index") == 0
        shared = channel._create_client()
        channel._pool = None  # what kombu does when it reconnects: the next client uses the new pool
        renewed = channel._create_client()
        assert renewed is not shared and renewed.connection_pool is channel.pool


@pytest.mark.redis
def test_acknowledgements_leave_redis_in_batches_and_at_close(redis_server: str, redis_client: Any) -> None:
    queue = Queue("farm-acks", Exchange("farm-acks"), routing_key="farm-acks")
    count = ACK_BATCH + 5
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        _publish(connection, queue, count)
        received: list[Any] = []
        with connection.Consumer(queue, callbacks=[lambda body, message: received.append(message)],
                                 accept=["json"]):
            while len(received) < count:
                connection.drain_events(timeout=5)
            assert redis_client.hlen("unacked") == count
            for message in received[:ACK_BATCH]:
                message.ack()
            assert redis_client.hlen("unacked") == 5 and redis_client.zcard("unacked_index") == 5  # one batch
            for message in received[ACK_BATCH:]:
                message.ack()
            assert redis_client.hlen("unacked") == 5  # waiting for the next read or the close
    assert redis_client.hlen("unacked") == 0 and redis_client.zcard("unacked_index") == 0


@pytest.mark.redis
def test_a_producer_batch_goes_to_its_queue_in_one_push_and_in_order(redis_server: str, redis_client: Any) -> None:
    queue = Queue("farm-pushes", Exchange("farm-pushes"), routing_key="farm-pushes")
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        with connection.Producer(connection.default_channel) as producer:
            producer.publish({"n": -1}, exchange=queue.exchange, routing_key="farm-pushes", declare=[queue])
            redis_client.config_resetstat()
            with producer.batch(max_size=100):
                for n in range(30):
                    producer.publish({"n": n}, exchange=queue.exchange, routing_key="farm-pushes")
        pushes = redis_client.info("commandstats")["cmdstat_lpush"]["calls"]
        assert pushes == 1
        received: list[Any] = []
        with connection.Consumer(queue, callbacks=[lambda body, message: received.append(body)], accept=["json"]):
            while len(received) < 31:
                connection.drain_events(timeout=5)
        assert [body["n"] for body in received] == list(range(-1, 30))


BATCH_QUEUE = Queue("farm-batch", Exchange("farm-batch"), routing_key="farm-batch")


def _publish(connection: Any, queue: Queue, count: int) -> None:
    with connection.Producer(connection.default_channel) as producer:
        for n in range(count):
            producer.publish({"n": n}, exchange=queue.exchange, routing_key=queue.routing_key, declare=[queue])


def _prefetching_channel(connection: Any, published: int) -> Any:
    """The connection's channel with a prefetch limit of 10, after ``published`` messages on BATCH_QUEUE."""
    _publish(connection, BATCH_QUEUE, published)
    channel = connection.default_channel
    channel.basic_qos(prefetch_count=10)
    return channel


@pytest.mark.redis
def test_one_read_reserves_as_many_messages_as_the_prefetch_limit_allows(redis_server: str,
                                                                         redis_client: Any) -> None:
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        channel = _prefetching_channel(connection, 100)  # a long queue: the limit bounds the read
        received: list[Any] = []
        in_hash_when_seen: list[int] = []

        def on_message(body: Any, message: Any) -> None:
            in_hash_when_seen.append(redis_client.hlen("unacked"))
            received.append(message)

        with connection.Consumer(BATCH_QUEUE, callbacks=[on_message], channel=channel, accept=["json"]):
            connection.drain_events(timeout=5)  # one BRPOP answered: a whole batch delivered
            assert [m.payload["n"] for m in received] == list(range(10))  # in order, the limit kept
            assert redis_client.llen("farm-batch") == 90
            assert in_hash_when_seen == [10] * 10  # each recorded unacked before the consumer saw it
            for message in received[3:]:
                message.ack()
            assert redis_client.hlen("unacked") == 10  # acknowledged; out of Redis at a read once due
            time.sleep(ACK_WAIT_S + 0.05)  # the oldest acknowledgement is due: the next read flushes them
            connection.drain_events(timeout=5)  # three still in flight: room for seven
            assert [m.payload["n"] for m in received[10:]] == list(range(10, 17))
            assert redis_client.llen("farm-batch") == 83 and redis_client.hlen("unacked") == 10
            for message in received[:3] + received[10:]:
                message.ack()
            channel.qos.flush_acks()  # what the next read does
            assert redis_client.hlen("unacked") == 0 and redis_client.zcard("unacked_index") == 0


@pytest.mark.redis
def test_a_batch_the_consumer_failed_on_goes_back_to_the_queue_at_once(redis_server: str,
                                                                       redis_client: Any) -> None:
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        channel = _prefetching_channel(connection, 20)  # a batch of 6: the first, a quarter of 19
        received: list[Any] = []

        def on_message(body: Any, message: Any) -> None:
            received.append(message)
            if len(received) == 2:
                raise RuntimeError("the consumer failed")

        with connection.Consumer(BATCH_QUEUE, callbacks=[on_message], channel=channel, accept=["json"]), \
                pytest.raises(RuntimeError, match="the consumer failed"):
            connection.drain_events(timeout=5)
        assert [m.payload["n"] for m in received] == [0, 1]
        assert sorted(redis_client.hkeys("unacked")) == sorted(m.delivery_tag for m in received)
        # the four it never saw are queued again, the next first, not left for the visibility timeout
        assert redis_client.llen("farm-batch") == 18
        assert [json.loads(item)["body"] for item in redis_client.lrange("farm-batch", -4, -1)][::-1] == \
            [base64.b64encode(json.dumps({"n": n}).encode()).decode() for n in range(2, 6)]


@pytest.mark.redis
def test_a_queue_consumed_without_acknowledgements_is_read_one_message_at_a_time(redis_server: str,
                                                                                 redis_client: Any) -> None:
    # Celery's reply queues: nothing of theirs may wait in the unacked hash for a restore
    queue = Queue("farm-replies", Exchange("farm-replies"), routing_key="farm-replies")
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        _publish(connection, queue, 5)
        received: list[Any] = []
        with connection.Consumer(queue, callbacks=[lambda body, message: received.append(body)],
                                 channel=connection.default_channel, accept=["json"], no_ack=True):
            connection.drain_events(timeout=5)
            assert received == [{"n": 0}]
            assert redis_client.llen("farm-replies") == 4 and redis_client.hlen("unacked") == 0
            while len(received) < 5:
                connection.drain_events(timeout=5)
        assert received == [{"n": n} for n in range(5)] and redis_client.hlen("unacked") == 0


@pytest.mark.redis
def test_a_read_takes_at_most_a_share_of_a_short_queue(redis_server: str, redis_client: Any) -> None:
    # a queue shorter than the room is left mostly to the worker's other processes and other workers
    with Connection(redis_server, transport=REDIS_TRANSPORT) as connection:
        _publish(connection, BATCH_QUEUE, 20)
        channel = connection.default_channel
        channel.basic_qos(prefetch_count=100)
        received: list[Any] = []
        with connection.Consumer(BATCH_QUEUE, callbacks=[lambda body, message: received.append(message)],
                                 channel=channel, accept=["json"]):
            connection.drain_events(timeout=5)  # BRPOP's message, then a quarter of the 19 left
            assert SHARE == 4 and [m.payload["n"] for m in received] == list(range(6))
            assert redis_client.llen("farm-batch") == 14 and redis_client.hlen("unacked") == 6
            connection.drain_events(timeout=5)  # then a quarter of the 13 left
            assert [m.payload["n"] for m in received[6:]] == list(range(6, 11))
            for message in received:
                message.ack()
            channel.qos.flush_acks()  # what the next read does
        assert redis_client.hlen("unacked") == 0
