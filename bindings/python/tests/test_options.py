"""libaf.options() (af_options_json): the description of every JSON option,
and the binding's own option parameters checked against it."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import libaf


def defaults(keys: list[dict[str, Any]]) -> dict[str, Any]:
    """Every described key at its default (objects: their keys' defaults)."""
    out: dict[str, Any] = {}
    for k in keys:
        if k["kind"] == "object":
            if "keys" in k:
                out[k["key"]] = defaults(k["keys"])
        elif k["default"] is not None:
            out[k["key"]] = k["default"]
    return out


def test_every_option_is_described() -> None:
    d = libaf.options()
    assert set(d) == {"af_context_new_with", "af_provider_new", "af_provider_set_options", "af_cse_with",
                      "af_lm_call_ex"}
    assert {"echo", "replay"} <= set(d["af_provider_new"])
    for keys in [d["af_context_new_with"], d["af_provider_set_options"], d["af_cse_with"],
                 *d["af_provider_new"].values()]:
        for k in keys:
            assert k["kind"] in ("int", "number", "str", "bool", "object"), k
            assert k["doc"], k
            if k["kind"] in ("int", "number"):
                assert k["min"] <= k["default"] <= k["max"], k
    sampling = {k["key"]: k for k in d["af_lm_call_ex"]}
    assert set(sampling) == {"temperature", "top_p", "max_tokens", "seed", "stop"}
    assert sampling["temperature"]["max"] == 2 and sampling["stop"]["max"] == 16
    lazy = next(k for k in d["af_context_new_with"] if k["key"] == "lazy")
    assert lazy["kind"] == "bool" and lazy["default"] is False


def test_an_lm_call_takes_the_sampling_params_up_to_their_described_bounds() -> None:
    params = {k["key"]: k for k in libaf.options()["af_lm_call_ex"]}
    ctx = libaf.Context()
    ctx.route("*", libaf.Provider.echo())
    msgs = [{"role": "user", "content": "hi"}]
    libaf.lm_call(msgs, "m", params={"temperature": params["temperature"]["max"],
                                     "max_tokens": params["max_tokens"]["min"]}, ctx=ctx)
    with pytest.raises(libaf.InvalidArgument, match="temperature"):
        libaf.lm_call(msgs, "m", params={"temperature": params["temperature"]["max"] + 0.5}, ctx=ctx)


def test_a_provider_takes_every_described_default_and_refuses_past_a_range() -> None:
    echo = libaf.options()["af_provider_new"]["echo"]
    libaf.Provider.echo(defaults(echo))
    numbers = [k for k in echo if k["kind"] == "number"]
    assert numbers, "echo has a ranged number option"
    k = numbers[0]
    with pytest.raises(libaf.InvalidArgument, match=k["key"]):
        libaf.Provider.echo({k["key"]: k["max"] * 2 + 1})


def test_context_parameters_cover_every_context_option() -> None:
    # Context(...) spells durations in seconds: "eval_timeout" for
    # "eval_timeout_ms"; every other option under its own name.
    params = set(inspect.signature(libaf.Context.__init__).parameters) - {"self"}
    keys = {k["key"] for k in libaf.options()["af_context_new_with"]}
    spelled = {k[: -len("_ms")] if k.endswith("_ms") else k for k in keys}
    assert spelled == params
    cache = next(k for k in libaf.options()["af_context_new_with"] if k["key"] == "plan_cache")
    with libaf.Context(lazy=True, plan_cache=defaults(cache["keys"])):
        pass
