"""Host tools and providers the Ray tests ship to workers. They live in a
module of their own (not a test file) so that workers import them by name:
the tests put this directory on the workers' PYTHONPATH."""

from __future__ import annotations

import os
from pathlib import Path

import libaf


def triage(ticket: libaf.Value) -> dict:
    """The program: an LM call classifies the ticket ({"id", "text"}), a
    host tool looks up its queue."""
    label = libaf.lm_call([{"role": "user", "content": ticket["text"]}], "m")
    return {"id": ticket["id"], "label": label, "queue": libaf.host_call("queue", label)}


def queue(label: libaf.Value) -> str:
    return "q-" + str(len(str(label)) % 3)


def die_once(marker: str, ticket_to_kill: str, label: libaf.Value) -> str:
    """queue(), except that the first worker to see ticket_to_kill's label
    exits the process at once (as a killed node would); marker records it."""
    if str(label).endswith(ticket_to_kill) and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os._exit(1)
    return queue(label)


def fail_every_third(req: libaf.LmRequest) -> str:
    """Host provider: "t<i>" with i % 3 == 0 fails; the others echo."""
    content = req.messages[-1]["content"]
    if int(content[1:]) % 3 == 0:
        raise RuntimeError(f"ticket {content} refused")
    return "m|" + content


def count_calls(log: str, req: libaf.LmRequest) -> str:
    """Host provider answering as echo does ("<model>|<last message>") that
    appends a line to the file log per request: the provider calls of every
    worker process, counted in one place (appends of a short line are atomic)."""
    with open(log, "a") as f:
        f.write(req.messages[-1]["content"] + "\n")
    return f"{req.model}|{req.messages[-1]['content']}"


def calls_in(log: str) -> int:
    """How many requests count_calls answered."""
    return len(Path(log).read_text().splitlines()) if Path(log).exists() else 0
