"""Which tests `make test` runs and which CI adds (`make test-slow`), in one table.

`make test` is the fast tier: every behaviour at least once, in under 10 minutes on 2 cores.
`make test-releases` runs, on the other releases, the fast tier of the release files (the
Makefile's RELEASE_TESTS) and the slow tests EVERY_RELEASE names.
The slow tier holds second examples of a behaviour the fast tier already proves (another model,
another way to turn dynamo-replay on, another release's corner) and jobs of many processes.
A line is a node id prefix under tests/python: a file, a test, or a test with its parameter.
The longest matching line decides; a line that matches no collected test is an error, so a
renamed test cannot slip from one tier to the other unseen.
"""

from __future__ import annotations

# Slow: CI runs them (make test-slow), make test does not.
SLOW = [
    # Whole files of end-to-end jobs, each a fresh process or several; FAST keeps one example each.
    "test_replay.py",
    "test_replay_changes.py",
    "test_guard_table.py",
    "test_fleet.py",
    "test_signed_replay.py",
    "test_torchrun.py",
    "test_store_lifecycle.py",
    "test_mlir_opinfo.py",  # PyTorch's OpInfo samples: test_mlir_ops lowers each operator family once
    # Second models: the first one of each test stays.
    "test_capture.py::test_gpt_with_dynamic_batch_and_sequence",  # test_gpt2_recompile_symbols_and_calls
    "test_capture.py::test_recompile_ladder_reasons_through_the_cli",  # test_why's recompile programs
    "test_capture.py::test_symbols_made_after_dynamo_take_their_graph_node_line[inductor]",  # [aot_eager]
    "test_capture.py::test_inductor_compile_keeps_its_code_and_pytorch_cache_artifacts[False]",  # [True]
    "test_graph_run.py::test_every_aten_graph_reproduces_the_stored_outputs_bitwise[convnet]",
    "test_graph_run.py::test_every_aten_graph_reproduces_the_stored_outputs_bitwise[hf_gpt2_train]",
    "test_graph_run.py::test_every_aten_graph_reproduces_the_stored_outputs_bitwise[hf_bert]",
    "test_graph_run.py::test_every_aten_graph_reproduces_the_stored_outputs_bitwise[inductor]",
    "test_mlir.py::test_every_graph_lowers_runs_and_matches[convnet]",
    "test_mlir.py::test_every_graph_lowers_runs_and_matches[hf_gpt2_train]",
    "test_mlir.py::test_every_graph_lowers_runs_and_matches[bf16_convnet]",
    "test_mlir_models.py",  # real models lowered: test_mlir's GPT and test_shared_tables' fill stay
    "test_torch_mlir.py::test_the_cases_are_every_aot_graph",  # reads every job's store
    "test_torch_mlir.py::test_torch_mlir_parses_lowers_runs_and_matches",  # mlp and gpt's cases stay
    "test_inspect_diff.py::test_gpt2_at_two_sequence_lengths",  # test_two_stores_name_the_size_guard_and_the_shapes
    "test_inspect_diff.py::test_a_restart_in_a_new_process_differs_only_where_the_job_did",  # the same, two processes
    "test_graphs.py::test_convnet_batch_norm_in_training_and_eval",  # test_mlp_inference_graphs_reproduce...
    "test_graphs.py::test_capture_leaves_inductor_cache_keys_and_code_unchanged",  # three Inductor processes
    "test_releases.py::test_an_unknown_release_runs_the_job_as_usual_with_one_warning[fleet replay]",
    "test_releases.py::test_an_unknown_release_runs_the_job_as_usual_with_one_warning[fleet capture]",
    "test_shared_tables.py::test_the_seeded_fill_gives_the_same_bits_in_cxx_and_python[7]",  # [0] stays
    # The proof that the validated-config test can fail: its capture and two replays stay.
    "test_library_closures.py::test_without_replays_checks_the_changed_validator_would_be_skipped",
    # Eight writers killed at random points: test_store's killed writer stays.
    "test_crash_recovery.py",
    # Other ways to turn dynamo-replay on in a forking job: the block's capture and replay stay.
    "test_forked_children.py",
    # The size fix proved by a capture of its own: the call fixes and replay --update stay.
    "test_miss_table.py::test_the_size_fix_captured_makes_a_new_length_replay",
    # Failures explained: one case per kind of failure a job dies of, and a recompile, stay (the
    # graph breaks and the generic kinds are test_why's programs); why --verify's refusals stay,
    # its reruns of a job are CI's.
    "test_why_failures.py::test_why_names_the_failure",
    "test_why_failures.py::test_verify_proves_the_edit",
]

# Fast: kept by make test although a SLOW line above covers them (the behaviour's one example).
FAST = [
    "test_replay.py::test_replay_compiles_nothing_and_matches_bitwise[gpt]",
    "test_replay_changes.py::test_changed_source_is_refused",
    "test_replay.py::test_strict_refuses_to_compile_and_names_the_guard",
    "test_replay.py::test_environment_variable_replays_an_unmodified_job",
    "test_guard_table.py::test_every_guard_kind_of_this_pytorch_has_a_row",
    "test_guard_table.py::test_every_row_has_a_case_or_says_why_not",
    "test_guard_table.py::test_the_docs_give_the_table",
    "test_guard_table.py::test_replay_gives_the_answer_of_a_plain_compile[global_tensor]",
    "test_fleet.py::test_one_process_captures_the_next_replays_and_a_restart_uses_its_local_copy",
    "test_fleet.py::test_redis_down_the_job_compiles_normally_with_one_warning",
    "test_signed_replay.py::test_the_attack_of_the_issue_is_refused_and_the_answer_stays_right",
    "test_torchrun.py::test_every_rank_replays_the_one_store[command]",
    "test_store_lifecycle.py::test_check_predicts_what_replay_does[source edit]",
    "test_store_lifecycle.py::test_eviction_drops_the_generation_unused_the_longest",
    "test_torch_mlir.py::test_torch_mlir_parses_lowers_runs_and_matches[mlp-0/0-inference]",
    "test_torch_mlir.py::test_torch_mlir_parses_lowers_runs_and_matches[gpt-0/1-inference]",
    "test_forked_children.py::test_a_forked_child_neither_fails_nor_touches_its_parent_s_state[capture_block]",
    "test_forked_children.py::test_a_forked_child_neither_fails_nor_touches_its_parent_s_state[replay_block]",
    "test_why_failures.py::test_why_names_the_failure[pairs_view-aot_eager]",  # runtime_assert
    "test_why_failures.py::test_why_names_the_failure[marked_branch]",  # constraint_violation
    "test_why_failures.py::test_why_names_the_failure[empty_or_not-0.5]",  # data_dependent
    "test_why_failures.py::test_why_names_the_failure[batch_in_dict]",  # recompile
]


# Slow, but run on every release (make test-releases runs the fast tier of its files and these):
# where a release differs, the slow example is the one that shows it.
EVERY_RELEASE = [
    "test_guard_table.py",  # every guard kind of each release, replayed against a plain compile
    "test_capture.py",  # the symbols and recompile reasons each release's tracing writes
    "test_replay.py::test_frames_precompile_cannot_save_are_named_and_traced_alone[train]",  # 2.13 saves fewer
    "test_replay_changes.py::test_frame_whose_guards_cannot_be_saved_compiles_at_replay_with_its_graphs_from_the_store",
    "test_replay_changes.py::test_decorated_forward_replays_and_a_frame_whose_guards_do_not_load_compiles",
    "test_replay.py::test_changed_config_is_refused_and_the_job_compiles_normally",  # each release's configs
    "test_torchrun.py::test_one_rank_refusing_makes_every_rank_compile",  # each release's process groups
]


# The files that take longest (worker seconds, `--durations`, in either tier), longest first:
# conftest puts them first in the collection, and the Makefile turns off xdist's own order (by
# number of tests), so the workers start the long files first and finish together, instead of
# one running a long file alone at the end. A line that names no file stops the run.
LONGEST_FIRST = [
    "test_replay.py",
    "test_torchrun.py",
    "test_training.py",
    "test_store_lifecycle.py",
    "test_fleet.py",
    "test_why_failures.py",
    "test_replay_changes.py",
    "test_library_closures.py",
    "test_signed_replay.py",
    "test_guard_table.py",
    "test_forked_children.py",
    "test_ranks.py",
    "test_graphs.py",
    "test_mlir_held_out.py",
]


def start_rank(nodeid: str) -> int:
    """Where a test's file comes in the order the workers take files (LONGEST_FIRST, then the rest)."""
    file = nodeid.split("::")[0]
    return LONGEST_FIRST.index(file) if file in LONGEST_FIRST else len(LONGEST_FIRST)


def runs_on_every_release(nodeid: str) -> bool:
    return any(_matches(nodeid, line) for line in EVERY_RELEASE)


def is_slow(nodeid: str) -> bool | None:
    """True or False by the longest matching line, None when no line matches."""
    best, slow = -1, None
    for lines, value in ((SLOW, True), (FAST, False)):
        for line in lines:
            if _matches(nodeid, line) and len(line) > best:
                best, slow = len(line), value
    return slow


def unmatched(nodeids: list[str]) -> list[str]:
    """The lines whose file was collected but that match none of its tests."""
    files = {nodeid.split("::")[0] for nodeid in nodeids}
    return [
        line
        for line in SLOW + FAST + EVERY_RELEASE
        if line.split("::")[0] in files and not any(_matches(nodeid, line) for nodeid in nodeids)
    ]


def _matches(nodeid: str, line: str) -> bool:
    # A whole file, a test with every parameter, or one parameter exactly.
    return nodeid == line or nodeid.startswith(line + "::") or nodeid.startswith(line + "[")


def selected(request, argname: str) -> list:
    """The values of a parametrized argument among the tests this session runs, in collection
    order: a module fixture that prepares each case (a process each) prepares only those a
    selected test reads, so a tier pays for its own cases."""
    values = []
    for item in request.session.items:
        value = getattr(item, "callspec", None) and item.callspec.params.get(argname)
        if item.module is request.module and value is not None and value not in values:
            values.append(value)
    return values
