"""Durable runs under SIGKILL: a batched run of 2 000 items against the
test LM server's latency is killed at five random moments and resumed with
its journal each time; the final output equals an uninterrupted run's, and
the server saw at most 1.05x the uninterrupted run's requests (only the
calls in flight at each kill are asked again)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import libaf

ITEMS = [f"ticket {i}" for i in range(2000)]
MODEL = "latency-20"  # the server answers after 20 ms
IN_FLIGHT = 32
KILLS = 5

# The child: loads the saved program, routes every model to the server and
# runs it over the items with the journal; prints the output as JSON.
CHILD = """
import json, sys, libaf
program, url, journal, items = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
ctx = libaf.Context()
ctx.route("*", libaf.Provider.openai(base_url=url, max_in_flight=%d, timeout_ms=10000, max_retries=0))
out = libaf.Program.load(program, ctx)(items, ctx=ctx, journal=journal, item_errors=True)
print(json.dumps(out.to_py()))
""" % IN_FLIGHT


def two_calls(ticket: libaf.Value) -> dict:
    label = libaf.lm_call([{"role": "user", "content": libaf.format("Classify: {}", ticket)}], MODEL)
    reply = libaf.lm_call([{"role": "user", "content": libaf.format("Reply to {} ({})", ticket, label)}], MODEL)
    return {"label": label, "reply": reply}


def requests(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/requests", timeout=10) as r:
        return json.load(r)["total"]


def child(tmp: Path, url: str, journal: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp / "prog.afg"), url, str(journal),
                             str(tmp / "items.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def finish(p: subprocess.Popen) -> dict:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return json.loads(out)


def test_a_run_killed_five_times_resumes_to_the_uninterrupted_result(ctx, lm_server, tmp_path) -> None:
    ir = libaf.trace(two_calls, "t", ctx=ctx).batch(ctx=ctx)
    ir.save(tmp_path / "prog.afg")
    (tmp_path / "items.json").write_text(json.dumps(ITEMS))

    before = requests(lm_server)
    t0 = time.monotonic()
    expected = finish(child(tmp_path, lm_server, tmp_path / "whole.afj"))
    whole_s = time.monotonic() - t0
    uninterrupted = requests(lm_server) - before
    assert uninterrupted == 2 * len(ITEMS)
    assert expected["reply"][7] == f"{MODEL}|Reply to ticket 7 ({MODEL}|Classify: ticket 7)"

    rng = random.Random(20261128)
    journal = tmp_path / "chaos.afj"
    before = requests(lm_server)
    killed, recorded = 0, [0]
    for _ in range(KILLS):
        p = child(tmp_path, lm_server, journal)
        # Somewhere in the run's work (after its start-up): five of these
        # add up to less than one whole run, so each kill stops a run midway.
        time.sleep(rng.uniform(0.1, 0.18) * whole_s)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait(60)
        recorded.append(libaf.journal_summary(journal)["calls"] if journal.exists() else 0)
    assert killed >= 3, "the runs finished before the kills: the test did not test anything"
    assert recorded == sorted(recorded) and recorded[-1] > 0, f"the journal did not grow: {recorded}"
    assert finish(child(tmp_path, lm_server, journal)) == expected
    chaos = requests(lm_server) - before
    assert chaos <= 1.05 * uninterrupted, f"{chaos} requests against {uninterrupted} uninterrupted"
    assert libaf.journal_summary(journal)["calls"] == 2 * len(ITEMS)
