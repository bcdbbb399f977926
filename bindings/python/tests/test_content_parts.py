"""LM call messages whose content is a list of text and image parts."""

from __future__ import annotations

import pytest

import libaf

PNG = "iVBORw0KGgo="
URL = "https://example.com/cat.png"


def parts(text: object = "What is this?", url: object = URL) -> list[dict]:
    return [
        {"type": "text", "text": text},
        {"type": "image", "url": url},
        {"type": "image", "media_type": "image/png", "data": PNG},
        {"type": "text", "text": "Be brief."},
    ]


def test_echo_reads_the_text_parts(ctx: libaf.Context) -> None:
    ctx.route("*", libaf.Provider.echo())
    out = libaf.lm_call([{"role": "user", "content": parts()}], "m", ctx=ctx)
    assert out.to_py() == "m|What is this?\n\nBe brief."


def test_a_host_provider_sees_every_part(ctx: libaf.Context) -> None:
    seen = []
    ctx.route("*", libaf.Provider.host(lambda req: seen.append(req.messages) or "ok"))
    assert libaf.lm_call([{"role": "user", "content": parts()}], "m", ctx=ctx).to_py() == "ok"
    assert seen == [[{"role": "user", "content": parts()}]]
    content = seen[0][-1]["content"]
    assert content[1]["url"] == URL and content[2] == {"type": "image", "media_type": "image/png", "data": PNG}


def test_traced_text_and_url(ctx: libaf.Context) -> None:
    ctx.route("*", libaf.Provider.echo())

    def ask(text: libaf.Value, url: libaf.Value) -> libaf.Value:
        return libaf.lm_call([{"role": "user", "content": parts(text, url)}], "m", ctx=ctx)

    ir = libaf.trace(ask, "q", "u", ctx=ctx)
    assert ir.input_count == 2 and ir.prims == ["lm_call"]
    assert ir("What is this?", URL, ctx=ctx).to_py() == "m|What is this?\n\nBe brief."


def test_a_bad_part_is_invalid_argument(ctx: libaf.Context) -> None:
    ctx.route("*", libaf.Provider.echo())
    bad = [{"type": "text", "text": "hi"}, {"type": "image", "media_type": "image/png", "data": "not base64!"}]
    with pytest.raises(libaf.InvalidArgument, match="not base64") as info:
        libaf.lm_call([{"role": "user", "content": bad}], "m", ctx=ctx)
    assert "messages[0].content[1]" in str(info.value)
