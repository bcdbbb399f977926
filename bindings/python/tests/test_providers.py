"""LM providers: echo, replay, openai (against a local test server), and
host providers written in Python."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from conftest import REPO, cause_of

import libaf

MSG = [{"role": "user", "content": "hi"}]
SCHEMA = {"answer": {"type": "str", "max": 20}, "score": {"type": "int", "min": 1, "max": 10}}


def test_echo_and_routes(ctx: libaf.Context) -> None:
    echo = libaf.Provider.echo()
    ctx.route("gpt-*", echo)
    assert libaf.lm_call(MSG, "gpt-x", ctx=ctx).to_py() == "gpt-x|hi"
    assert libaf.lm_schema_call(MSG, "gpt-x", SCHEMA, ctx=ctx).to_py() == {"answer": "", "score": 1}
    ctx.route("gpt-exact", libaf.Provider.host(lambda req: "exact"))  # an exact name wins
    assert libaf.lm_call(MSG, "gpt-exact", ctx=ctx).to_py() == "exact"
    with pytest.raises(libaf.NotFound, match="claude"):
        libaf.lm_call(MSG, "claude", ctx=ctx)
    stats = echo.stats()
    assert stats["finished"] == 2
    echo.set_max_in_flight(3)
    assert echo.stats()["max_in_flight"] == 3


def test_providers_from_specs(ctx: libaf.Context) -> None:
    ctx.route("m", libaf.Provider.from_spec({"type": "echo"}))
    assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "m|hi"
    libaf.Provider.from_spec(type="ollama", base_url="http://127.0.0.1:9")
    with pytest.raises(libaf.InvalidArgument, match="unknown type"):
        libaf.Provider.from_spec(type="carrier-pigeon")


def test_bad_provider_options(ctx: libaf.Context) -> None:
    with pytest.raises(libaf.InvalidArgument):
        libaf.Provider.echo(no_such_option=1)
    with pytest.raises(libaf.InvalidArgument):
        libaf.Provider.openai()  # base_url is required
    with pytest.raises(TypeError):
        libaf.Provider.echo({"a": 1}, latency_ms=1)
    with pytest.raises(TypeError):
        ctx.route("*", "not a provider")
    with pytest.raises(ValueError):
        libaf.Provider.echo().set_max_in_flight(-1)


def test_replay_records_then_replays(ctx: libaf.Context, tmp_path: Path) -> None:
    path = str(tmp_path / "rec.jsonl")
    ctx.route("m", libaf.Provider.replay(path=path, mode="record", upstream={"type": "echo"}))
    assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "m|hi"
    with libaf.Context() as fresh:
        fresh.route("m", libaf.Provider.replay(path=path))
        assert libaf.lm_call(MSG, "m", ctx=fresh).to_py() == "m|hi"
        with pytest.raises(libaf.NotFound):
            libaf.lm_call([{"role": "user", "content": "never recorded"}], "m", ctx=fresh)


def test_host_provider_sees_the_request(ctx: libaf.Context) -> None:
    seen = []

    def answer(req: libaf.LmRequest) -> object:
        seen.append(req)
        if req.schema is not None:
            return {"answer": "structured", "score": 7}
        return f"{req.model} says {req.messages[-1]['content']}"

    ctx.route("*", libaf.Provider.host(answer))
    assert libaf.lm_call(MSG, "py", ctx=ctx).to_py() == "py says hi"
    assert libaf.lm_schema_call(MSG, "py", SCHEMA, ctx=ctx).to_py() == {"answer": "structured", "score": 7}
    assert seen[0].json["messages"] == MSG and "json_schema" in seen[1].json


def test_async_host_provider(ctx: libaf.Context) -> None:
    async def answer(req: libaf.LmRequest) -> str:
        await asyncio.sleep(0.01)
        return "from a coroutine"

    ctx.route("*", libaf.Provider.host(answer))
    assert libaf.lm_call(MSG, "m", ctx=ctx).to_py() == "from a coroutine"


def test_host_provider_failures(ctx: libaf.Context) -> None:
    class Quota(Exception):
        pass

    def fail(req: libaf.LmRequest) -> str:
        raise Quota("quota exceeded")

    ctx.route("fail", libaf.Provider.host(fail))
    with pytest.raises(libaf.ProviderError) as e:
        libaf.lm_call(MSG, "fail", ctx=ctx)
    assert isinstance(cause_of(e.value, Quota), Quota)

    ctx.route("bad-schema", libaf.Provider.host(lambda req: {"answer": "x", "score": 99}))
    with pytest.raises(libaf.SchemaError, match="score"):
        libaf.lm_schema_call(MSG, "bad-schema", SCHEMA, ctx=ctx)
    ctx.route("not-text", libaf.Provider.host(lambda req: object()))
    with pytest.raises(libaf.ProviderError) as e:
        libaf.lm_call(MSG, "not-text", ctx=ctx)
    with pytest.raises(TypeError):
        libaf.Provider.host("not callable")


def test_openai_provider(ctx: libaf.Context, lm_server: str) -> None:
    p = libaf.Provider.openai(base_url=lm_server, timeout_ms=2000, max_retries=2, backoff_ms=10)
    ctx.route("*", p)
    assert libaf.lm_call(MSG, "ok", ctx=ctx).to_py() == "ok|hi"
    assert libaf.lm_call(MSG, "500x1", ctx=ctx).to_py() == "500x1|hi"  # retried
    assert libaf.lm_schema_call(MSG, "schema-ok", SCHEMA, ctx=ctx).to_py() == {"answer": "fine", "score": 7}
    with pytest.raises(libaf.ProviderError, match="500"):
        libaf.lm_call(MSG, "500always", ctx=ctx)
    with pytest.raises(libaf.SchemaError):
        libaf.lm_schema_call(MSG, "schema-bad", SCHEMA, ctx=ctx)


def test_run_summary_adds_up_the_servers_usage_and_retries(ctx: libaf.Context, lm_server: str) -> None:
    # The server reports len(model) prompt and len(reply) completion tokens
    # per request; "500x2" fails twice before answering.
    ctx.route("*", libaf.Provider.openai(base_url=lm_server, timeout_ms=2000, max_retries=2, backoff_ms=10))

    def program(q: libaf.Value) -> list:
        return [libaf.lm_call([{"role": "user", "content": c}], m) for m, c in
                [("ok", "a"), ("ok", "bb cc"), ("500x2", q)]]

    run = libaf.trace(program, "q", ctx=ctx).compile(ctx).start("summary", ctx=ctx, summary=True)
    assert run.wait().to_py() == ["ok|a", "ok|bb cc", "500x2|summary"]
    s = run.summary()
    assert (s["total"]["calls"], s["total"]["retries"]) == (3, 2)
    assert s["total"]["prompt_tokens"] == 2 + 2 + 5
    assert s["total"]["completion_tokens"] == len("ok|a") + len("ok|bb cc") + len("500x2|summary")
    assert (s["models"]["ok"]["calls"], s["models"]["500x2"]["retries"]) == (2, 2)


def test_the_urgent_tag_starts_first_with_one_request_in_flight(ctx: libaf.Context) -> None:
    def program(q: libaf.Value) -> list:
        msgs = [{"role": "user", "content": q}]
        with libaf.tag("urgent"):
            first = libaf.lm_call(msgs, "first")
        return [first, libaf.lm_call(msgs, "second")]

    def plain(q: libaf.Value) -> list:
        msgs = [{"role": "user", "content": q}]
        return [libaf.lm_call(msgs, "first"), libaf.lm_call(msgs, "second")]

    for fn, want in ((plain, "second"), (program, "first")):
        order: list[str] = []
        host = libaf.Provider.host(lambda req: order.append(req.model) or "ok")
        host.set_max_in_flight(1)
        ctx.route("*", host)
        libaf.trace(fn, "q", ctx=ctx)("q", ctx=ctx)
        # Untagged, the later of two equal roots starts first; the hint turns it round.
        assert order[0] == want, order


def test_host_provider_wrong_reply_type_is_a_type_error(ctx: libaf.Context) -> None:
    """A plain lm_call wants a str: None or a number is a TypeError naming
    the provider's function and the call, not the text "null" or "42"."""

    def says_nothing(req: libaf.LmRequest) -> object:
        return None

    def says_a_number(req: libaf.LmRequest) -> object:
        return 42

    for fn, shown in ((says_nothing, "NoneType None"), (says_a_number, "int 42")):
        ctx.route("*", libaf.Provider.host(fn))
        with pytest.raises(libaf.ProviderError) as e:
            libaf.lm_call(MSG, "m", ctx=ctx)
        cause = cause_of(e.value, TypeError)
        assert isinstance(cause, TypeError)
        assert fn.__qualname__ in str(cause) and "lm_call to model 'm'" in str(cause) and shown in str(cause)
    # JSON data still answers a schema call.
    ctx.route("*", libaf.Provider.host(lambda req: {"answer": "x", "score": 1}))
    assert libaf.lm_schema_call(MSG, "m", SCHEMA, ctx=ctx).to_py() == {"answer": "x", "score": 1}
