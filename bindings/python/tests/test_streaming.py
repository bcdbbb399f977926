"""Streaming runs, sampling params, fallback routes and provider options."""

from __future__ import annotations

import threading

import pytest

import libaf


def ask(ctx: libaf.Context, params: dict | None = None) -> libaf.Ir:
    return libaf.trace(
        lambda q: libaf.lm_call([{"role": "user", "content": q}], "m", ctx=ctx, params=params), "q", ctx=ctx
    )


def streamed(ctx: libaf.Context, ir: libaf.Ir, q: str, tag: str | None = None) -> tuple[str, dict]:
    got: dict = {}
    lock = threading.Lock()

    def on_piece(eqn: int, item: int, text: str | None) -> None:
        with lock:
            if text is None:
                got.pop((eqn, item), None)
            else:
                got[(eqn, item)] = got.get((eqn, item), "") + text

    out = ir.compile(ctx)(q, ctx=ctx, stream=on_piece, stream_tag=tag).to_py()
    return out, got


def test_a_streamed_run_delivers_pieces(ctx: libaf.Context) -> None:
    ctx.route("*", libaf.Provider.echo())
    ir = ask(ctx)
    assert streamed(ctx, ir, "one two") == ("m|one two", {(0, 0): "m|one two"})
    assert streamed(ctx, ir, "x", tag="live") == ("m|x", {})  # nothing carries the tag


def test_a_host_provider_streams_and_restarts(ctx: libaf.Context) -> None:
    def answer(req: libaf.LmRequest) -> str:
        if req.streaming:
            req.stream("wro")
            req.restart_stream()
            req.stream("he")
            req.stream("llo")
        return "hello"

    ctx.route("*", libaf.Provider.host(answer))
    assert streamed(ctx, ask(ctx), "q") == ("hello", {(0, 0): "hello"})


def test_sampling_params_are_in_the_ir(ctx: libaf.Context) -> None:
    text = ask(ctx, {"temperature": 0, "max_tokens": 16}).to_text()
    assert "temperature=0.0" in text and "max_tokens=16" in text
    with pytest.raises(libaf.InvalidArgument, match="top_p"):  # raised in the traced function, escaping as itself
        ask(ctx, {"top_p": 2})


def test_fallback_routes_and_provider_options(ctx: libaf.Context) -> None:
    def down(req: libaf.LmRequest) -> str:
        raise RuntimeError("down")

    echo = libaf.Provider.echo()
    ctx.route_fallback("*", [libaf.Provider.host(down), echo])
    assert ask(ctx)("q", ctx=ctx).to_py() == "m|q"
    with pytest.raises(libaf.InvalidArgument, match="at least one provider"):
        ctx.route_fallback("*", [])
    echo.set_options(requests_per_minute=60, schema_retries=1)
    stats = echo.stats()
    assert stats["requests_per_minute"] == 60 and stats["schema_retries"] == 1
    with pytest.raises(libaf.InvalidArgument, match="rpm"):
        echo.set_options({"rpm": 1})
