"""Quickstart: trace a function that asks a model, compile it, run it, save it
and load it back.

The echo provider stands in for a model (it answers ``"<model>|<prompt>"``);
``libaf.Provider.openai(base_url=..., api_key_env=...)`` is a real one.

    python examples/quickstart.py
"""

from __future__ import annotations

import os
import tempfile

import libaf


def ask(question: libaf.Value) -> libaf.Value:
    """Formats the prompt and asks the model: traced, both become equations."""
    prompt = libaf.format("Answer in one line: {}", question)
    return libaf.lm_call([{"role": "user", "content": prompt}], "assistant")


def main() -> None:
    with libaf.Context() as ctx:
        ctx.route("assistant", libaf.Provider.echo())

        ir = libaf.trace(ask, "an example question")  # traced once, on a placeholder
        print(f"traced {ir.eqn_count} equations: {ir.prims}")
        print(ir)

        program = ir.compile()
        answer = program("What is libaf?")
        print("answer:", answer.to_py())

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ask.afg")
            program.save(path)
            loaded = libaf.Program.load(path)
            again: str = loaded("What is libaf?").to_py()
            assert again == answer.to_py()
            print(f"loaded from {os.path.basename(path)}:", again)


if __name__ == "__main__":
    main()
