"""libaf.ray on a local Ray cluster (2 CPUs): order, exactly-once after a
killed worker, per-item errors, equality with a single-process run, bad
input failing fast with the shard or item named, and one run journal per
shard (journal_dir) that a rerun and a retried shard answer from."""

from __future__ import annotations

import functools
import os
import threading
import time
from pathlib import Path

import pytest

import libaf

ray = pytest.importorskip("ray", reason="libaf.ray needs Ray (pip install 'ray>=2'); not importable here")
afray = pytest.importorskip("libaf.ray")

import ray_helpers  # noqa: E402 - after the skip

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster():
    # Workers import ray_helpers (the tools) and libaf the way this process does.
    path = os.pathsep.join(p for p in [str(HERE), os.environ.get("PYTHONPATH", "")] if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield
    ray.shutdown()


@pytest.fixture
def program(tmp_path: Path) -> Path:
    with libaf.Context() as c:
        c.register_function("queue", ray_helpers.queue, "str")
        path = tmp_path / "triage.afg"
        libaf.trace(ray_helpers.triage, {"id": 0, "text": "t"}, ctx=c).save(path)
    return path


def tickets(n: int) -> list[dict]:
    return [{"id": i, "text": f"t{i}"} for i in range(n)]


def echo_spec(**tools: afray.Tool) -> afray.WorkerSpec:
    return afray.WorkerSpec(routes={"*": {"type": "echo", "latency_ms": 2}},
                            tools=tools or {"queue": afray.Tool(ray_helpers.queue, "str")})


def expected(i: int) -> dict:
    label = f"m|t{i}"
    return {"id": i, "label": label, "queue": ray_helpers.queue(label)}


def test_results_in_input_order_equal_a_single_process_run(cluster, program: Path) -> None:
    seen: list[tuple[int, int]] = []
    out = afray.run(program, tickets(200), echo_spec(), shard_size=16, progress=lambda d, t: seen.append((d, t)))
    assert out == [expected(i) for i in range(200)]
    assert out == afray.run_in_process(program, tickets(200), echo_spec(), shard_size=16)
    # The same as calling the program itself, item by item, here.
    with libaf.Context() as c:
        c.register_function("queue", ray_helpers.queue, "str")
        c.route("*", libaf.Provider.echo())
        p = libaf.Program.load(program, c)
        assert out[:20] == [p(t, ctx=c).to_py() for t in tickets(20)]
    assert [t for _, t in seen] == [200] * 13 and seen[-1][0] == 200
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_progress_true_draws_a_bar_of_items(cluster, program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert afray.run(program, tickets(40), echo_spec(), shard_size=16, progress=True) == [
        expected(i) for i in range(40)]
    err = capsys.readouterr().err
    assert "40/40" in err and "items" in err, err


def test_every_item_exactly_once_after_a_killed_worker(cluster, program: Path, tmp_path: Path) -> None:
    marker = tmp_path / "killed"
    die = functools.partial(ray_helpers.die_once, str(marker), "t37")
    out = afray.run(program, tickets(120), echo_spec(queue=afray.Tool(die, "str")), shard_size=10, max_retries=2)
    assert marker.exists(), "a worker was killed mid-shard"
    assert out == [expected(i) for i in range(120)]


def test_per_item_errors(cluster, program: Path) -> None:
    spec = afray.WorkerSpec(routes={"*": ray_helpers.fail_every_third},
                            tools={"queue": afray.Tool(ray_helpers.queue, "str")})
    out = afray.run(program, tickets(30), spec, shard_size=7)
    for i, r in enumerate(out):
        if i % 3 == 0:
            assert r["error"]["name"] == "PROVIDER" and f"ticket t{i} refused" in r["error"]["message"], r
        else:
            assert r == expected(i)


def test_a_ray_dataset_of_inputs(cluster, program: Path) -> None:
    pytest.importorskip("ray.data", reason="ray.data needs ray[data] (pandas, pyarrow)")
    ds = ray.data.from_items([{"ticket": t} for t in tickets(40)])  # one column: the item
    assert afray.run(program, ds, echo_spec(), shard_size=8) == [expected(i) for i in range(40)]


def test_unpicklable_host_tool_is_refused_before_anything_ships(cluster, program: Path) -> None:
    lock = threading.Lock()

    def locked(label: libaf.Value) -> str:
        with lock:
            return "x"

    with pytest.raises(TypeError, match="host tool 'queue' cannot be pickled"):
        afray.run(program, tickets(4), echo_spec(queue=afray.Tool(locked, "str")))
    with pytest.raises(ValueError, match="'api_key' would ship a secret"):
        afray.run(program, tickets(4), afray.WorkerSpec(routes={"*": {"type": "openai", "api_key": "sk-1"}}))


def test_a_program_the_loader_rejects_fails_fast_naming_the_shard(cluster, program: Path) -> None:
    data = bytearray(program.read_bytes())
    data[len(data) // 2] ^= 0xFF
    t0 = time.monotonic()
    with pytest.raises(afray.ShardError, match=r"shard \d+ \(items \d+\.\.\d+\): the program failed the loader"):
        afray.run(bytes(data), tickets(50), echo_spec(), shard_size=5)
    assert time.monotonic() - t0 < 30


def test_inputs_that_do_not_match_the_program_name_the_item(cluster, program: Path) -> None:
    items = tickets(20)
    items[13] = {"id": 13, "body": "no text"}
    with pytest.raises(afray.ShardError, match=r"shard 1 \(items 10\.\.19\): item 13: the inputs do not match"):
        afray.run(program, items, echo_spec(), shard_size=10)
    with pytest.raises(TypeError, match="inputs: a list"):
        afray.run(program, "t1", echo_spec())


def counting_spec(log: Path, **tools: afray.Tool) -> afray.WorkerSpec:
    """Answers as echo_spec does, counting the provider calls of every worker in log."""
    return afray.WorkerSpec(routes={"*": functools.partial(ray_helpers.count_calls, str(log))},
                            tools=tools or {"queue": afray.Tool(ray_helpers.queue, "str")})


def test_journal_dir_has_a_journal_per_shard_and_a_rerun_asks_no_provider(cluster, program: Path,
                                                                          tmp_path: Path) -> None:
    log, journals = tmp_path / "calls.log", tmp_path / "journals"
    out = afray.run(program, tickets(50), counting_spec(log), shard_size=16, journal_dir=journals)
    assert out == [expected(i) for i in range(50)]
    assert ray_helpers.calls_in(str(log)) == 50
    starts = [0, 16, 32, 48]
    assert sorted(p.name for p in journals.glob("*.afj")) == sorted(f"shard-{s}.afj" for s in starts)
    for s in starts:
        path = journals / f"shard-{s}.afj"
        assert libaf.journal_summary(path)["calls"] == min(16, 50 - s)
        assert os.stat(path).st_mode & 0o777 == 0o600

    # The same job again (on Ray, then in this process): every call is answered from the journals.
    assert afray.run(program, tickets(50), counting_spec(log), shard_size=16, journal_dir=journals) == out
    assert afray.run_in_process(program, tickets(50), counting_spec(log), shard_size=16,
                                journal_dir=journals) == out
    assert ray_helpers.calls_in(str(log)) == 50
    # Other inputs in the same journal_dir: refused, naming the shard.
    with pytest.raises(afray.ShardError, match=r"shard \d+ \(items \d+\.\.\d+\): InvalidArgument"):
        afray.run(program, tickets(51)[1:], counting_spec(log), shard_size=16, journal_dir=journals)


def test_a_retried_shard_replays_what_its_first_attempt_finished(cluster, program: Path, tmp_path: Path) -> None:
    # The worker dies in the host tool of t37, which runs only once t37's LM
    # call is committed to the journal: the retry answers it from there.
    log, journals, marker = tmp_path / "calls.log", tmp_path / "journals", tmp_path / "killed"
    die = functools.partial(ray_helpers.die_once, str(marker), "t37")
    out = afray.run(program, tickets(60), counting_spec(log, queue=afray.Tool(die, "str")), shard_size=10,
                    max_retries=2, journal_dir=journals)
    assert marker.exists(), "a worker was killed mid-shard"
    assert out == [expected(i) for i in range(60)]
    asked = Path(log).read_text().splitlines()
    assert asked.count("t37") == 1, "the retried shard asked again for a call its first attempt finished"
    assert 60 <= len(asked) < 60 + 10
    assert libaf.journal_summary(journals / "shard-30.afj")["calls"] == 10


def test_the_readme_ray_example_runs_as_written(cluster, tmp_path: Path, monkeypatch) -> None:
    # The README's block, verbatim, in a directory holding the file it names
    # (what `af demo --save-item triage_item.afg` writes).
    from conftest import REPO

    af_cli = REPO / "build" / "bin" / "af"
    if not af_cli.exists():
        pytest.skip("the af CLI is not built here (it writes the example's triage_item.afg)")
    import subprocess

    subprocess.run([str(af_cli), "demo", "--save", str(tmp_path / "triage.afg"), "--save-item",
                    str(tmp_path / "triage_item.afg")], check=True, capture_output=True)
    readme = (REPO / "README.md").read_text()
    block = readme.split("```python\nimport libaf.ray as afray")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec("import libaf.ray as afray" + block, scope)  # noqa: S102 - the README's own code
    results = scope["results"]
    assert len(results) == 1000
    assert results[0]["team"] == "billing" and "charged twice" in results[0]["reply"]
    assert sorted(p.name for p in (tmp_path / "runs" / "triage").glob("*.afj")) == ["shard-0.afj", "shard-250.afj",
                                                                                   "shard-500.afj", "shard-750.afj"]
