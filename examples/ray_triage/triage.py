"""Triage generated support tickets on a Ray cluster with libaf.ray.

Each ticket goes through a saved libaf program: an LM call labels it, a host
tool picks its queue. The program is traced and saved here, shipped once to
the workers through Ray's object store, and every worker runs its shards as
batched runs (all of a shard's LM calls in flight at once, an error value per
failed ticket). Offline by default: the echo provider with latency stands in
for a model.

    python examples/ray_triage/triage.py                  # local Ray, 4000 tickets
    python examples/ray_triage/triage.py --tickets 20000 --address auto

On a real cluster: start Ray on the nodes (`ray start --head` on one,
`ray start --address=<head>:6379` on the others), install libaf on every
node (pip install ./bindings/python), and run this script with --address
auto from any node (host tools defined in the driver script travel by value;
tools in your own modules need those modules on every node, e.g. with
--working-dir). For a real model pass --openai-base-url and export the key
on every node under the name given by --api-key-env (OPENAI_API_KEY by
default): the key is read from each worker's environment and never travels
in the job.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

import ray

import libaf
import libaf.ray as afray

QUEUES = ["billing", "bugs", "accounts"]


def queue_for(label: libaf.Value) -> str:
    """The host tool: a queue from the label (a lookup table in real life)."""
    return QUEUES[sum(map(ord, str(label))) % len(QUEUES)]


def triage(ticket: libaf.Value) -> dict:
    label = libaf.lm_call([{"role": "system", "content": "Label the ticket: billing, bug or account."},
                           {"role": "user", "content": ticket["text"]}], "triage-model")
    return {"id": ticket["id"], "label": label, "queue": libaf.host_call("queue", label)}


def generate(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    topics = ["my card was charged twice", "the app crashes on start", "I cannot log in",
              "refund please", "export to CSV fails", "change my email"]
    return [{"id": i, "text": f"#{i}: {rnd.choice(topics)}"} for i in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tickets", type=int, default=4000)
    ap.add_argument("--shard-size", type=int, default=250)
    ap.add_argument("--latency-ms", type=int, default=20, help="echo provider latency per call")
    ap.add_argument("--address", default=None, help="Ray cluster address ('auto' = the running cluster)")
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local cluster (no --address)")
    ap.add_argument("--working-dir", default=None, help="ship this directory to the workers (runtime_env)")
    ap.add_argument("--openai-base-url", default=None, help="use an OpenAI-compatible endpoint instead of echo")
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY")
    args = ap.parse_args()

    # queue_for lives in __main__, so Ray ships it by value: the workers need
    # libaf installed, not this file.
    runtime_env = {"working_dir": args.working_dir} if args.working_dir else None
    if args.address:
        ray.init(address=args.address, runtime_env=runtime_env)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)

    if args.openai_base_url:
        model = {"type": "openai", "base_url": args.openai_base_url, "api_key_env": args.api_key_env,
                 "max_in_flight": 32}
    else:
        model = {"type": "echo", "latency_ms": args.latency_ms, "max_in_flight": 256}
    spec = afray.WorkerSpec(routes={"triage-model": model}, tools={"queue": afray.Tool(queue_for, "str")})

    tickets = generate(args.tickets)
    with libaf.Context() as c, tempfile.TemporaryDirectory() as d:
        c.register_function("queue", queue_for, "str")
        path = os.path.join(d, "triage.afg")
        libaf.trace(triage, tickets[0], ctx=c).save(path)

        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.monotonic() - last[0] > 1 or done == total:
                last[0] = time.monotonic()
                print(f"  {done}/{total} tickets", file=sys.stderr)

        t0 = time.monotonic()
        results = afray.run(path, tickets, spec, shard_size=args.shard_size, progress=progress)
        seconds = time.monotonic() - t0

    failed = sum(1 for r in results if "error" in r)
    by_queue: dict[str, int] = {}
    for r in results:
        if "error" not in r:
            by_queue[r["queue"]] = by_queue.get(r["queue"], 0) + 1
    assert all(r["id"] == t["id"] for t, r in zip(tickets, results) if "error" not in r), "out of order"
    print(f"{len(results)} tickets in {seconds:.2f} s: {len(results) / seconds:.0f} tickets/s "
          f"({failed} failed); per queue: {by_queue}")
    print("first:", results[0])
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
