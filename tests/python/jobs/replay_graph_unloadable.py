"""python -m dynamo_replay, where the first saved graph of the store that the job loads fails
to load (as a graph saved by another build might): its frame must compile, every other frame
replay, and the job run. Usage: replay_graph_unloadable.py replay STORE JOB [ARGS...]"""

import sys

from torch._functorch._aot_autograd import aot_autograd_result

from dynamo_replay import __main__ as cli

_load = aot_autograd_result.BundledAOTAutogradCacheArtifact.after_deserialization
failed: list[str] = []


def after_deserialization(self):  # type: ignore[no-untyped-def]
    if not failed:
        failed.append(self.key)
        raise RuntimeError("a saved graph that does not load")
    return _load(self)


aot_autograd_result.BundledAOTAutogradCacheArtifact.after_deserialization = after_deserialization
sys.exit(cli.main(sys.argv[1:]))
