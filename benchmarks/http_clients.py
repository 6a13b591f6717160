"""HTTP clients side by side: N POSTs of the farm's request body at a fixed concurrency.

    python benchmarks/http_clients.py --client aiohttp|aiohttp-cold|streams|httpx|farm --url URL
        [--calls 1000] [--concurrency 100]

``aiohttp``: one ``ClientSession`` (its default connector), ``asyncio.gather`` over a semaphore;
``httpx``: 10 ``AsyncClient``s of 10 connections each (one big httpx pool is CPU-bound), the
reference of issue 16 (needs ``pip install -e '.[bench]'``); ``streams``: HTTP/1.1 by hand on
asyncio streams, the floor (``with_streams``); ``farm``: ``farm.run_sweep`` of
``calls / 10`` one-turn cases x 10 runs against the same URL, in-process, no output file.

Each first makes ``concurrency`` warm-up calls (imports, connections), then times the calls and
prints one JSON line: ``{"client", "calls", "elapsed_s", "cpu_s"}``, ``elapsed_s`` being the
calls' wall time (the farm's: its summary's ``duration_ms``) and ``cpu_s`` this process's CPU
over the same span. Run in a child process each, so that no client warms another's caches.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

RUNS_PER_CASE = 10


def body(i: int) -> dict[str, Any]:
    """What the farm's HTTP protocol sends for one turn (SPEC 5.2), give or take the context."""
    context = {"user_id": "test-user", "team_id": "test-team", "locale": "en-us", "client_type": "test",
               "client_ip": "127.0.0.1", "referer": "test", "accept": "standard", "case_id": f"C{i:05d}",
               "run": 1, "chat_id": f"{i:032x}", "metadata": None, "sly_data": None, "connector": None}
    return {"messages": [{"role": "user", "content": f"say pong number {i}"}], "sly_data": None, "context": context}


async def gather_limited(call: Callable[[int], Awaitable[None]], calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await call(i)

    await asyncio.gather(*(one(i) for i in range(calls)))


async def with_aiohttp(url: str, calls: int, concurrency: int, *, cold: bool = False) -> tuple[float, float]:
    import aiohttp

    async def calls_on(session: aiohttp.ClientSession, n: int) -> None:
        async def call(i: int) -> None:
            async with session.post(url, json=body(i)) as response:
                if response.status != 200 or "pong" not in (await response.json())["text"]:
                    raise RuntimeError(f"bad answer: HTTP {response.status}")

        await gather_limited(call, n, concurrency)

    async with aiohttp.ClientSession() as session:
        await calls_on(session, concurrency)  # warm-up: imports, code paths, and (unless cold) connections
        if not cold:
            return await timed(lambda: calls_on(session, calls))
    async with aiohttp.ClientSession() as fresh:  # cold: the timed calls open their own connections
        return await timed(lambda: calls_on(fresh, calls))


async def with_streams(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """The floor: HTTP/1.1 by hand on asyncio streams, one keep-alive connection per slot, the
    answer's length read from its Content-Length. Not a client anyone should use (no chunking, no
    redirects, no TLS): it shows what the agent server, the network and the event loop allow."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"

    async def slot(numbers: list[int]) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while numbers:
                payload = json.dumps(body(numbers.pop())).encode()
                writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                length = int(head.split("content-length:")[1].split("\r\n")[0])
                answer = await reader.readexactly(length)
                if not head.startswith("http/1.1 200") or b"pong" not in answer:
                    raise RuntimeError(f"bad answer: {head.splitlines()[0]}")
        finally:
            writer.close()

    def run(n: int) -> Awaitable[Any]:
        numbers = list(range(n))
        return asyncio.gather(*(slot(numbers) for _ in range(concurrency)))

    await run(concurrency)  # warm-up: code paths (its connections close: the timed calls open theirs)
    return await timed(lambda: run(calls))


async def with_httpx(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    import httpx

    limits = httpx.Limits(max_connections=10, max_keepalive_connections=10)
    clients = [httpx.AsyncClient(limits=limits, trust_env=False) for _ in range(max(concurrency // 10, 1))]
    try:
        async def call(i: int) -> None:
            response = await clients[i % len(clients)].post(url, json=body(i))
            if response.status_code != 200 or "pong" not in response.json()["text"]:
                raise RuntimeError(f"bad answer: HTTP {response.status_code}")

        await gather_limited(call, concurrency, concurrency)
        return await timed(lambda: gather_limited(call, calls, concurrency))
    finally:
        for client in clients:
            await client.aclose()


async def timed(run: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await run()
    return time.perf_counter() - wall0, time.process_time() - cpu0


def with_farm(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    from farm import TestSettings, run_sweep

    with tempfile.TemporaryDirectory(prefix="farm-clients-") as tmp:
        suite = harness.write_suite(Path(tmp) / "suite.jsonl", max(calls // RUNS_PER_CASE, 1))
        settings = TestSettings(input=str(suite), name=url, runs=1, parallel=concurrency, cwd=tmp)
        run_sweep(settings)  # warm-up: one run per case
        cpu0 = time.process_time()
        report = run_sweep(dataclasses.replace(settings, runs=RUNS_PER_CASE))
        cpu = time.process_time() - cpu0
    if report.summary.by_status.get("passed") != report.summary.total_runs:
        raise RuntimeError(f"not every run passed: {report.summary.by_status}")
    return report.summary.duration_ms / 1000, cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--client", choices=("aiohttp", "aiohttp-cold", "streams", "httpx", "farm"), required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=100)
    args = p.parse_args()
    if args.client == "farm":
        elapsed, cpu = with_farm(args.url, args.calls, args.concurrency)
    else:
        run = {"aiohttp": with_aiohttp, "aiohttp-cold": functools.partial(with_aiohttp, cold=True),
               "streams": with_streams, "httpx": with_httpx}[args.client]
        elapsed, cpu = asyncio.run(run(args.url, args.calls, args.concurrency))
    print(json.dumps({"client": args.client, "calls": args.calls, "elapsed_s": elapsed, "cpu_s": cpu}))


if __name__ == "__main__":
    main()
