"""A batched run over a list, where an item that fails becomes its error value
and the other items complete (``item_errors=True``).

A host provider stands in for a model: it refuses questions that mention
"secret", as a real provider may fail a request.

    python examples/batch.py
"""

from __future__ import annotations

from typing import Any

import libaf


def answer(request: libaf.LmRequest) -> str:
    """The host provider: the reply text, or an exception that fails the call."""
    question = str(request.messages[-1]["content"])
    if "secret" in question:
        raise ValueError(f"refused: {question!r}")
    return f"{request.model} says: {question.upper()}"


def one(question: libaf.Value) -> dict[str, libaf.Value]:
    """The program for one question; batched, it runs on a list of them."""
    reply = libaf.lm_call([{"role": "user", "content": question}], "shouty")
    return {"question": question, "reply": reply}


def main() -> None:
    questions = ["what is libaf?", "tell me the secret", "how do batches run?"]
    with libaf.Context() as ctx:
        ctx.route("shouty", libaf.Provider.host(answer))
        program = libaf.trace(one, "a question").batch().compile()

        # A batched output has the per-item structure with a list at each
        # leaf: {"question": [...], "reply": [...]}. A failed item's entry is
        # {"error": {"code", "name", "message"}} in every list.
        out = program(questions, item_errors=True).to_py()
        replies: list[Any] = out["reply"]
        answered = 0
        for question, reply in zip(questions, replies):
            if isinstance(reply, dict):
                error = reply["error"]
                print(f"{question!r} failed ({error['name']}): {error['message']}")
            else:
                answered += 1
                print(f"{question!r}: {reply}")
        print(f"{answered} of {len(questions)} items answered")


if __name__ == "__main__":
    main()
