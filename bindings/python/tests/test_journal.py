"""Run journals (journal=, libaf.journal_summary, libaf.journal_compact): a
second run of the same program on the same inputs with the same journal
answers the LM calls the first completed without reaching the provider."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

import libaf

SCHEMA = {"label": {"type": "str", "max": 40}, "urgency": {"type": "int", "min": 1, "max": 5}}
TICKETS = ["printer on fire", "password reset", "refund please"]
CALLS_PER_ITEM = 3


class Counting:
    """Host provider counting the requests that reach it: a plain call is
    answered "<model>|<last message>", a structured one {"label", "urgency"}.
    Items whose text is in fail_once fail the first time they are asked."""

    def __init__(self, fail_once: tuple[str, ...] = ()) -> None:
        self.calls = 0
        self.lock = threading.Lock()
        self.fail_once = set(fail_once)

    def __call__(self, req: libaf.LmRequest) -> object:
        content = req.messages[-1]["content"]
        with self.lock:
            self.calls += 1
            if content in self.fail_once:
                self.fail_once.discard(content)
                raise RuntimeError(f"{content!r} refused once")
        if req.schema is not None:
            return {"label": req.model, "urgency": 1 + len(content) % 5}
        return f"{req.model}|{content}"


def review(ticket: libaf.Value) -> dict:
    """Three LM calls per ticket, the later ones on the earlier replies."""
    summary = libaf.lm_call([{"role": "user", "content": ticket}], "summarize")
    triage = libaf.lm_schema_call([{"role": "user", "content": libaf.format("Triage: {}", summary)}],
                                  "triage", SCHEMA)
    reply = libaf.lm_call([{"role": "user", "content": libaf.format("Answer {} ({})", ticket, triage["label"])}],
                          "reply")
    return {"summary": summary, "triage": triage, "reply": reply}


@pytest.fixture
def provider(ctx: libaf.Context) -> Counting:
    p = Counting()
    ctx.route("*", libaf.Provider.host(p))
    return p


@pytest.fixture
def program(ctx: libaf.Context) -> libaf.Program:
    """review batched over a list of tickets."""
    return libaf.trace(review, "t", ctx=ctx).batch(ctx=ctx).compile(ctx)


def test_a_second_run_answers_every_call_from_the_journal(ctx, provider, program, tmp_path: Path) -> None:
    journal = tmp_path / "runs" / "review.afj"  # the missing parent directory is created
    first = program(TICKETS, ctx=ctx, journal=journal).to_py()
    n = CALLS_PER_ITEM * len(TICKETS)
    assert provider.calls == n
    assert first["summary"] == [f"summarize|{t}" for t in TICKETS]
    assert first["triage"]["label"] == ["triage"] * len(TICKETS)  # batched: each leaf lists the items

    again = program(TICKETS, ctx=ctx, journal=journal).to_py()
    assert provider.calls == n, "the second run reached the provider"
    assert again == first
    # The same through every entry point that takes run options, str paths too.
    assert program.start(TICKETS, ctx=ctx, journal=str(journal)).wait().to_py() == first
    assert program.call(TICKETS, ctx=ctx, options=libaf.RunOptions(journal=journal)).to_py() == first
    assert asyncio.run(program.call_async(TICKETS, ctx=ctx, journal=journal)).to_py() == first
    assert provider.calls == n

    s = libaf.journal_summary(journal)
    assert s["calls"] == n
    assert {m: v["calls"] for m, v in s["models"].items()} == {"summarize": 3, "triage": 3, "reply": 3}
    assert all(isinstance(s[k], str) and s[k] for k in ("program", "inputs"))
    assert s["prompt_tokens"] == sum(v["prompt_tokens"] for v in s["models"].values())


def test_the_journal_is_private_to_its_owner(ctx, provider, program, tmp_path: Path) -> None:
    journal = tmp_path / "j.afj"
    program(TICKETS, ctx=ctx, journal=journal)
    assert os.stat(journal).st_mode & 0o777 == 0o600


def test_a_run_that_failed_resumes_asking_only_what_is_missing(ctx, program, tmp_path: Path) -> None:
    flaky = Counting(fail_once=("password reset",))
    ctx.route("*", libaf.Provider.host(flaky))
    journal = tmp_path / "j.afj"
    first = program(TICKETS, ctx=ctx, journal=journal, item_errors=True).to_py()
    assert first["summary"][1]["error"]["name"] == "PROVIDER"
    asked = flaky.calls  # 3 calls for each item that completed, 1 for the refused one
    assert asked == CALLS_PER_ITEM * (len(TICKETS) - 1) + 1
    assert libaf.journal_summary(journal)["calls"] == CALLS_PER_ITEM * (len(TICKETS) - 1)

    second = program(TICKETS, ctx=ctx, journal=journal, item_errors=True).to_py()
    assert flaky.calls - asked == CALLS_PER_ITEM, "only the failed item's calls are asked again"
    assert second["summary"] == [f"summarize|{t}" for t in TICKETS]
    assert second["reply"][0] == first["reply"][0]
    assert libaf.journal_summary(journal)["calls"] == CALLS_PER_ITEM * len(TICKETS)


def test_a_journal_of_other_inputs_or_another_program_is_refused(ctx, provider, program, tmp_path: Path) -> None:
    journal = tmp_path / "j.afj"
    program(TICKETS, ctx=ctx, journal=journal)
    asked = provider.calls
    with pytest.raises(libaf.InvalidArgument) as e:
        program(["something else"], ctx=ctx, journal=journal)
    assert e.value.code == libaf.InvalidArgument.code == 1 and e.value.name == "INVALID_ARGUMENT"
    other = libaf.trace(lambda t: libaf.lm_call([{"role": "user", "content": t}], "m"), "t", ctx=ctx).compile(ctx)
    with pytest.raises(libaf.InvalidArgument):
        other(TICKETS[0], ctx=ctx, journal=journal)
    assert provider.calls == asked
    # Refused, never changed: it still answers its own program and inputs.
    program(TICKETS, ctx=ctx, journal=journal)
    assert provider.calls == asked


def test_a_file_that_is_not_a_journal_is_a_format_error(ctx, provider, program, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.afj"
    garbage.write_bytes(b"this is not a SQLite database, nor a journal\n" * 100)
    with pytest.raises(libaf.FormatError) as e:
        program(TICKETS, ctx=ctx, journal=garbage)
    assert e.value.code == libaf.FormatError.code == 4
    with pytest.raises(libaf.FormatError):
        libaf.journal_summary(garbage)
    with pytest.raises(libaf.FormatError):
        libaf.journal_compact(garbage)
    assert provider.calls == 0
    with pytest.raises(libaf.NotFound):
        libaf.journal_summary(tmp_path / "missing.afj")
    with pytest.raises(ValueError, match="journal"):
        program(TICKETS, ctx=ctx, journal="")
    with pytest.raises(ValueError):
        libaf.journal_summary("")


def test_a_compacted_journal_still_resumes(ctx, provider, program, tmp_path: Path) -> None:
    journal = tmp_path / "j.afj"
    first = program(TICKETS, ctx=ctx, journal=journal).to_py()
    before = libaf.journal_summary(journal)
    assert libaf.journal_compact(journal) is None
    assert libaf.journal_compact(str(journal)) is None  # again: nothing left to do
    assert libaf.journal_summary(journal) == before
    asked = provider.calls
    assert program(TICKETS, ctx=ctx, journal=journal).to_py() == first
    assert provider.calls == asked
    assert os.stat(journal).st_mode & 0o777 == 0o600


def test_a_journal_a_run_holds_cannot_be_compacted(ctx, program, tmp_path: Path) -> None:
    release = threading.Event()
    started = threading.Event()

    def held(req: libaf.LmRequest) -> str:
        started.set()
        release.wait(10)
        return {"label": "ok", "urgency": 1} if req.schema is not None else "ok"

    ctx.route("*", libaf.Provider.host(held))
    journal = tmp_path / "j.afj"
    run = program.start(["a"], ctx=ctx, journal=journal)
    try:
        assert started.wait(10)
        with pytest.raises(libaf.IOError):
            libaf.journal_compact(journal)
    finally:
        release.set()
    run.wait()
    libaf.journal_compact(journal)  # free again once the run finished


def test_ray_run_in_process_keeps_a_journal_per_shard_and_batch(tmp_path: Path) -> None:
    # libaf.ray imports without Ray; run_in_process runs the shards here, with
    # the journals run() gives its workers.
    import functools

    import libaf.ray as afray
    import ray_helpers

    def ask(ticket: libaf.Value) -> libaf.Value:
        return libaf.lm_call([{"role": "user", "content": ticket["text"]}], "m")

    with libaf.Context() as c:
        ir = libaf.trace(ask, {"id": 0, "text": "t"}, ctx=c)
    items: list = [{"id": i, "text": f"t{i}"} for i in range(10)]
    items[5] = {"text": "t5", "id": 5}  # another structure (key order): a batch of its own in shard 4
    log, journals = tmp_path / "calls.log", tmp_path / "journals"
    spec = afray.WorkerSpec(routes={"*": functools.partial(ray_helpers.count_calls, str(log))})
    out = afray.run_in_process(ir, items, spec, shard_size=4, journal_dir=journals)
    assert out == [f"m|t{i}" for i in range(10)]
    assert ray_helpers.calls_in(str(log)) == 10
    names = {"shard-0.afj": 4, "shard-4.afj": 3, "shard-4-item-5.afj": 1, "shard-8.afj": 2}
    assert {p.name: libaf.journal_summary(p)["calls"] for p in journals.glob("*.afj")} == names
    assert afray.run_in_process(ir, items, spec, shard_size=4, journal_dir=journals) == out
    assert ray_helpers.calls_in(str(log)) == 10
    with pytest.raises(ValueError, match="journal_dir"):
        afray.run_in_process(ir, items, spec, journal_dir="")


class Looping(Counting):
    """A "loop" model says "go" until its prompt holds three '>' marks, then
    "stop"; other models are answered as by Counting."""

    def __call__(self, req: libaf.LmRequest) -> object:
        if req.model != "loop":
            return super().__call__(req)
        content = req.messages[-1]["content"]
        with self.lock:
            self.calls += 1
        return "go" if content.count(">") < 3 else "stop"


def agent(ticket: libaf.Value) -> dict:
    """A loop asking until the model says stop, then a switch on its last
    answer: LM calls inside a loop body and a branch, keyed by their path."""

    def body(s):
        text = libaf.concat(s["text"], ">")
        return {"text": text, "say": libaf.lm_call([{"role": "user", "content": text}], "loop")}

    end = libaf.while_loop(lambda s: libaf.match(s["say"], "go"), body, {"text": ticket, "say": "go"}, 10)
    branches = {
        "stop": lambda t: libaf.lm_call([{"role": "user", "content": libaf.format("Close {}", t)}], "close"),
        "go": lambda t: libaf.lm_call([{"role": "user", "content": libaf.format("Escalate {}", t)}], "escalate"),
    }
    return {"trail": end["text"], "last": libaf.switch(end["say"], branches, end["text"])}


def test_calls_in_loops_and_branches_resume_by_their_place(ctx, tmp_path: Path) -> None:
    provider = Looping()
    ctx.route("*", libaf.Provider.host(provider))
    program = libaf.trace(agent, "t", ctx=ctx).batch(ctx=ctx).compile(ctx)
    journal = tmp_path / "agent.afj"
    first = program(TICKETS, ctx=ctx, journal=journal).to_py()
    n = len(TICKETS) * (3 + 1)  # three passes of the loop, one branch
    assert provider.calls == n
    assert first["last"] == [f"close|Close {t}>>>" for t in TICKETS]

    streamed: dict = {}

    def stream(eqn: int, item: int, text) -> None:
        streamed[(eqn, item)] = "" if text is None else streamed.get((eqn, item), "") + text

    again = program(TICKETS, ctx=ctx, journal=journal, stream=stream).to_py()
    assert provider.calls == n, "a call inside the loop or the branch reached the provider"
    assert again == first
    # Answers from the journal are streamed whole, as a provider that does not stream sends them.
    assert set(first["last"]) <= set(streamed.values())
    assert libaf.journal_summary(journal)["models"]["loop"]["calls"] == 3 * len(TICKETS)


def test_a_damaged_row_is_refused_never_answered(ctx, provider, program, tmp_path: Path) -> None:
    import sqlite3

    journal = tmp_path / "review.afj"
    program(TICKETS, ctx=ctx, journal=journal)
    with sqlite3.connect(journal) as db:  # a byte of a reply changed behind the journal's back
        db.execute("UPDATE calls SET reply = 'summarize|tampered' WHERE reply = 'summarize|password reset'")
    with pytest.raises(libaf.FormatError, match="damaged"):
        program(TICKETS, ctx=ctx, journal=journal)
    assert provider.calls == CALLS_PER_ITEM * len(TICKETS)
