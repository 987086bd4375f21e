"""Replay of real torch.compile jobs in fresh processes.

Each job is captured once in its own process, then replayed in another one with an empty
Inductor cache and no C++ compiler on PATH; the outputs must be bitwise equal to the captured
run's. Captured by default, no frame PyTorch could save may compile (no Dynamo frame traced, no
compile callback, no FX-graph or AOTAutograd cache miss), and each frame it could not save is
traced alone, named with the reason, its graphs taken from the store; captured with
--no-precompile, Dynamo traces again but AOTAutograd, Inductor and the compiler are skipped.
Calls outside what was captured must compile normally, or fail in strict mode with the guard
that rejected them. A job changed since capture: test_replay_changes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from replay_workloads import (  # noqa: E402
    JOB,
    KEY,
    Captured,
    assert_bitwise_equal,
    compiler_report,
    job_env,
    run,
)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    stores: dict[str, Captured] = {}

    def get(workload: str, *options: str) -> Captured:
        key = " ".join([workload, *options])
        if key not in stores:
            stores[key] = Captured(tmp_path_factory.mktemp(workload), workload, *options)
        return stores[key]

    return get


@pytest.mark.parametrize("workload", ["gpt", "graph_break", "ladder", "hf_gpt2", "hf_t5", "unnamed_code"])
def test_replay_compiles_nothing_and_matches_bitwise(captured, workload: str) -> None:
    job = captured(workload)
    extra = {"DYNAMO_REPLAY_KEY": KEY} if workload == "graph_break" else {}
    result, out = job.replay("replay", "--strict", **extra)
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["compile_starts"] == [] and report["frames_traced"] == [] and report["unique_graphs"] == 0
    assert report["fxgraph_cache_miss"] == 0 and report["autograd_cache_miss"] == 0
    assert report["dynamo_cache_hit"] >= 1
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))
    assert "compiled here: 0 frames (0.00 s)" in result.stderr
    assert "compile time saved" in result.stderr
    # Inductor's CPU vector-ISA probe (a compiler and a Python child per ISA) does not run on
    # the CPU flags of the capture (test_isa_probe_... fakes others).
    assert "CPU ISA probe reused" in result.stderr and report["isa_checks"] == []


# The frames of each training job that PyTorch's precompile cannot save, and the words that say
# why: none. transformers' loss_function (a property) and a dataclass __init__ (generated code)
# are named through the function that holds their code (the unnamed_code workload proves they
# run compiled). The optimizer step is saved and replayed (tests/python/test_training.py).
NOT_SAVED: dict[str, dict[str, str]] = {"train": {}, "hf_train": {}}


@pytest.mark.parametrize("workload", ["train", "hf_train"])
def test_frames_precompile_cannot_save_are_named_and_traced_alone(captured, workload: str) -> None:
    """A whole training step: the frames PyTorch could not save are traced at replay, each named
    with its reason at capture and at replay, and no other (the optimizer's step replays). The
    losses and trained parameters are bitwise those of the captured run."""
    job = captured(workload)
    for frame, reason in NOT_SAVED[workload].items():
        assert f"not saved for replay without Dynamo, compiles at replay: {frame} (" in job.stderr
        assert reason in job.stderr
    result, out = job.replay("replay")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert set(report["frames_traced"]) == set(NOT_SAVED[workload])
    assert "CLASS_MATCH guard cannot be serialized" not in job.stderr + result.stderr
    assert report["fxgraph_cache_miss"] == 0 and report["autograd_cache_miss"] == 0
    assert "not compiled during capture" not in result.stderr
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


# Each way a frame compiles at replay though the store holds its graphs, one line each:
# (workload, capture options, why its frame compiles here).
FALLBACKS = {
    "not saved, and recompiled": ("local_class", (), "class is defined inside a function"),
    "refused at install": ("train_opaque", (), "(ID_MATCH) has no description that another process can compare"),
    "captured without precompile": ("gpt", ("--no-precompile",), "traced again (captured with --no-precompile)"),
}


@pytest.mark.parametrize("case", FALLBACKS)
def test_a_frame_compiled_at_replay_takes_every_graph_from_the_store(captured, case: str) -> None:
    """At least what PyTorch's warm caches give: a frame Dynamo traces again at replay finds
    every AOTAutograd entry and kernel it needs in the store, so Inductor generates no code and
    no compiler runs (none is on PATH)."""
    workload, options, why = FALLBACKS[case]
    job = captured(workload, *options)
    result, out = job.replay(f"fallback-{workload}")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["frames_traced"] and why in result.stderr
    # (AOTAutograd may also look up a key it never stores, a miss that generates nothing.)
    assert report["autograd_cache_hit"] >= 1 and report["fxgraph_cache_miss"] == 0
    assert report["inductor_codegens"] == 0, "a frame compiled at replay generated code the store holds"
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_a_saved_graph_that_does_not_load_makes_its_frame_compile_and_the_job_runs(captured) -> None:
    """A training step of several frames and resume functions, its first saved graph failing to
    load at install: that frame compiles, named, and nothing else of the package is dropped or
    left calling a global that was not installed."""
    job = captured("train")
    out = job.root / "unloadable"
    result = run(
        str(Path(__file__).parent / "jobs" / "replay_graph_unloadable.py"),
        "replay",
        str(job.store),
        str(JOB),
        "train",
        str(out),
        env=job_env(job.root / "unloadable-cache", compiler=True),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "its compiled graph does not load (RuntimeError: a saved graph that does not load)" in result.stderr
    traced = compiler_report(out)["frames_traced"]
    # That frame, and the resume functions its new compile made (named after it); no other.
    assert traced and all(traced[0] in name for name in traced) and "step" not in traced, traced
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_no_precompile_capture_replays_without_aot_inductor_or_compiler(captured) -> None:
    """A whole training step (zero_grad, forward, backward, optimizer step), captured with
    --no-precompile: Dynamo traces each frame again, and every graph comes from the store."""
    job = captured("train", "--no-precompile")
    result, out = job.replay("replay")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert "step" in report["frames_traced"]
    # Inductor's graphs (forward, backward, optimizer step) all come from the store. Of the
    # AOTAutograd entries, two are found (training graph, optimizer step); the graph of
    # `return loss.detach()` calls nothing, so Inductor builds nothing and PyTorch caches nothing.
    assert report["fxgraph_cache_miss"] == 0 and report["fxgraph_cache_hit"] == 3
    assert report["autograd_cache_hit"] == 2 and report["autograd_cache_miss"] == 1
    assert "traced again (captured with --no-precompile)" in result.stderr
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_isa_probe_is_reused_only_on_the_same_cpu_flags(captured, tmp_path: Path) -> None:
    """Inductor's CPU vector-ISA probe is reused at replay only on the CPU's flags of the
    capture (test_replay_compiles_nothing_... shows it reused): other flags refuse the store,
    and the job compiles as usual with the probe, never with the captured kernels."""
    job = captured("gpt")
    out = tmp_path / "faked"
    code = (
        "import sys\nfrom dynamo_replay import fingerprint, __main__ as cli\n"
        "fingerprint.cpu_isa_flags = lambda: 'x86_64,avx2,avx512,amx_tile'\n"
        f"sys.exit(cli.main(['replay', {str(job.store)!r}, {str(JOB)!r}, 'gpt', {str(out)!r}]))"
    )
    result = run("-c", code, env=job_env(tmp_path / "faked-cache", compiler=True))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cpu.flags: captured" in result.stderr and "now x86_64,avx2,avx512,amx_tile" in result.stderr
    report = compiler_report(out)
    assert report["compile_starts"] and report["isa_checks"]  # compiled as usual, probe included
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_new_shape_compiles_normally_and_is_right(captured) -> None:
    job = captured("ladder")
    result, out = job.replay("new-shape", compiler=True, new_shape=True)
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["compile_starts"] == ["DYNAMO 1/0"] and report["frames_traced"] == ["scale_and_shift"]
    outputs = torch.load(out / "outputs.pt")
    assert_bitwise_equal(job.outputs, outputs[:4])
    x = torch.linspace(-1, 1, 32).reshape(4, 8)
    torch.testing.assert_close(outputs[4], torch.relu(x * 3.0) + x.sum())
    assert "compiled here: 1 frames" in result.stderr
    assert "scale_and_shift" in result.stderr and "failed the guards of every saved entry" in result.stderr


def test_a_new_shape_on_gpt2_is_explained_by_check_and_replay_alike(captured, tmp_path: Path) -> None:
    """transformers' GPT-2, captured at batch 2 (lengths 16 and 24), called with batch 1: check
    --run and the replay name the same guard of the nearest saved entry, with both values."""
    import json

    job = captured("hf_gpt2")
    summary = tmp_path / "summary.json"
    result, _ = job.replay("gpt2-batch-1", "--summary-json", str(summary), compiler=True, new_shape=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (compiled,) = [c for c in json.loads(summary.read_text())["compiled"] if c["miss"]]
    miss = compiled["miss"]
    assert (miss["kind"], miss["subject"], miss["at_capture"], miss["now"]) == ("size", "input_ids.size(0)", "2", "1")
    assert "torch._dynamo.mark_dynamic(input_ids, 0)" in miss["fix"]
    checked = run(
        "-m",
        "dynamo_replay",
        "check",
        "--run",
        "--json",
        str(job.store),
        str(JOB),
        "hf_gpt2",
        str(tmp_path / "check-out"),
        "--new-shape",
        env=job_env(tmp_path / "check-cache", compiler=False),
    )
    assert checked.returncode == 3, checked.stderr[-3000:]
    frame = f"{compiled['function']} ({compiled['filename']}:{compiled['line']})"
    (plan,) = [p for p in json.loads(checked.stdout)["frames"] if p["frame"] == frame]
    assert plan["miss"] == miss and plan["why"] == compiled["reason"]


def test_strict_refuses_to_compile_and_names_the_guard(captured) -> None:
    result, out = captured("ladder").replay("strict-new-shape", "--strict", new_shape=True)
    assert result.returncode != 0
    assert "dynamo-replay: strict replay: scale_and_shift (" in result.stderr
    assert "would compile: the call failed the guards of every saved entry" in result.stderr
    assert "rank mismatch. expected 1, actual 2" in result.stderr and "Traceback" not in result.stderr
    assert not (out / "outputs.pt").exists()


def test_environment_variable_replays_an_unmodified_job(captured, tmp_path: Path) -> None:
    job = captured("gpt")
    out = tmp_path / "out"
    result = run(
        str(JOB), "gpt", str(out), env=job_env(tmp_path / "cache", compiler=False, DYNAMO_REPLAY=str(job.store))
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert compiler_report(out)["compile_starts"] == []
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))
    assert f"dynamo-replay: {job.store}" in result.stderr


def test_changed_config_is_refused_and_the_job_compiles_normally(captured) -> None:
    job = captured("graph_break")
    result, out = job.replay("changed-config", compiler=True, TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE="1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "not loaded: this process differs from the one captured" in result.stderr
    assert "config.inductor.max_autotune_pointwise: captured False, now True" in result.stderr
    assert compiler_report(out)["compile_starts"]  # compiled as usual
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_wrong_key_is_refused_before_loading(captured) -> None:
    job = captured("graph_break")
    result, out = job.replay("wrong-key", "--strict", DYNAMO_REPLAY_KEY="not-the-key")
    assert result.returncode != 0
    assert (
        result.stderr.startswith("dynamo-replay: ")
        and "not loaded: the store's signature does not verify" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not (out / "outputs.pt").exists()
