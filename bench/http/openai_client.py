"""The official `openai` package's AsyncOpenAI in the closed loop of
af_http_bench (bench/http/http_client.cpp), for bench/http/run.py.

    python openai_client.py <base_url> <in_flight> <requests> <latency_file>

`in_flight` tasks share one AsyncOpenAI client (its default connection pool)
and each awaits chat.completions.create in turn until `requests` have
finished; an untimed warm-up of `in_flight` requests opens the connections
first. Prints one JSON line like af_http_bench and writes each timed
request's latency in nanoseconds, one per line, to latency_file.
"""

import asyncio
import json
import sys
import time

import httpx2
from openai import AsyncOpenAI, DefaultAsyncHttpxClient


async def closed_loop(client, in_flight, total, latencies):
    issued = 0
    errors = []

    async def worker():
        nonlocal issued
        while issued < total:
            i = issued
            issued += 1
            t0 = time.perf_counter_ns()
            try:
                r = await client.chat.completions.create(
                    model="bench",
                    messages=[{"role": "user", "content": f"Say hello to request {i}."}],
                )
                if not r.choices[0].message.content:
                    errors.append("empty reply")
            except Exception as e:  # counted and reported, like the C++ clients
                errors.append(repr(e))
            if latencies is not None:
                latencies.append(time.perf_counter_ns() - t0)

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return errors


async def main():
    base_url, in_flight, total, latency_file = (
        sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    # No retries: an error is counted, not hidden. The client's default pool
    # keeps 100 connections alive and waits 5 s for a new one: at 1000 in
    # flight it reconnected for most requests and timed out, so it keeps one
    # connection per request in flight and waits 30 s, as libaf's provider.
    http = DefaultAsyncHttpxClient(
        limits=httpx2.Limits(max_connections=in_flight, max_keepalive_connections=in_flight),
        timeout=httpx2.Timeout(600.0, connect=30.0))
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, http_client=http)
    await closed_loop(client, in_flight, in_flight, None)  # warm-up
    latencies = []
    c0, t0 = time.process_time(), time.perf_counter()
    errors = await closed_loop(client, in_flight, total, latencies)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    await client.close()
    with open(latency_file, "w") as f:
        f.writelines(f"{ns}\n" for ns in latencies)
    print(json.dumps({"client": "python", "in_flight": in_flight, "requests": total,
                      "errors": len(errors), "seconds": seconds, "cpu_seconds": cpu}))
    if errors:
        print(f"python: {len(errors)} errors, first: {errors[0]}", file=sys.stderr)
        sys.exit(1)


asyncio.run(main())
