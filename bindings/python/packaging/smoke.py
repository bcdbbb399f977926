"""A small traced program, run against an installed libaf wheel.

ci.sh runs it in a fresh venv outside the repository that holds nothing but
the wheel. Each step reaches a different library the wheel carries: tracing
and the echo provider (libaf itself), a schema "pattern" (RE2), a saved graph
(zstd, FlatBuffers, zlib), a run journal (SQLite), and the HTTP provider
factory (libcurl; created only, nothing is sent).
"""

import os
import sys
import tempfile
from pathlib import Path

import libaf

SCHEMA = {"type": "dict", "fields": {"slug": {"type": "str", "min": 1, "pattern": "^[a-z]+$"}}}


def ask(name):
    greeting = libaf.lm_call([{"role": "user", "content": libaf.format("Hello, {}!", name)}], "greeter")
    slug = libaf.lm_schema_call([{"role": "user", "content": name}], "slugger", SCHEMA)
    return {"greeting": greeting, "slug": slug["slug"]}


def main() -> None:
    where = Path(libaf.__file__).resolve().parent
    print(f"libaf from {where} on Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp, libaf.Context() as ctx:
        ctx.route("*", libaf.Provider.echo())
        ir = libaf.trace(ask, "x")
        assert ir.prims == ["format", "lm_call", "lm_schema_call"], ir.prims
        ir.save(Path(tmp) / "ask.afg")
        program = libaf.Ir.load(Path(tmp) / "ask.afg").compile()
        out = program("World", journal=Path(tmp) / "ask.afj").to_py()
        assert out["greeting"] == "greeter|Hello, World!", out
        assert out["slug"] == "a", out  # the shortest str matching the pattern
        assert libaf.journal_summary(Path(tmp) / "ask.afj")["calls"] == 2
        os.environ["LIBAF_SMOKE_KEY"] = "unused"
        libaf.Provider.openai(base_url="http://127.0.0.1:9/v1", api_key_env="LIBAF_SMOKE_KEY")
    print(f"traced {len(ir.prims)} equations, ran them from a saved graph: {out}")


if __name__ == "__main__":
    main()
