"""Structured output from Python types: the reply of an LM call as an instance
of a dataclass, its schema made from the class's annotations.

The echo provider stands in for a model (it answers with the smallest reply
the schema allows).

    python examples/schema_types.py
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Literal

import libaf


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Ticket:
    title: Annotated[str, libaf.Length(max=80), libaf.Doc("one line")]
    severity: Annotated[int, libaf.Range(1, 5)]
    priority: Priority
    kind: Literal["bug", "feature"]
    component: str = dataclasses.field(metadata={"doc": "the module at fault"})


def messages(report: str | libaf.Value) -> list[dict[str, str | libaf.Value]]:
    return [
        {"role": "system", "content": "File the bug report as a ticket."},
        {"role": "user", "content": report},
    ]


def triage(report: libaf.Value) -> libaf.Value:
    """Traced: the schema call is an equation, and its result a Value (a
    placeholder) even when the schema is given as a type."""
    ticket: libaf.Value = libaf.lm_schema_call(messages(report), "triage", Ticket)
    return ticket


def main() -> None:
    print("schema:", libaf.schema_of(Ticket))
    with libaf.Context() as ctx:
        ctx.route("triage", libaf.Provider.echo())

        # Eager, given the type: the reply comes back as a Ticket.
        ticket: Ticket = libaf.lm_schema_call(messages("The app crashes on save."), "triage", Ticket)
        print("eager:", ticket)
        print(f"  severity {ticket.severity} of 5, priority {ticket.priority.name}")

        # Traced and compiled: the output is a Value; as_type makes the Ticket.
        program = libaf.trace(triage, "a report").compile()
        value = program("The app crashes on save.")
        traced = libaf.as_type(value, Ticket)
        print("traced:", traced)
        assert traced == ticket


if __name__ == "__main__":
    main()
