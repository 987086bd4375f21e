"""DYNAMO_REPLAY=job.dynrep: replay an unmodified job.

PyTorch calls every entry point in the `torch.backends` group at the end of `import torch`
(its plugin mechanism for out-of-tree backends, on unless TORCH_DEVICE_BACKEND_AUTOLOAD=0).
This package registers `on_torch_import` there: with DYNAMO_REPLAY unset it returns at once;
set, it starts replay for the whole process and prints the summary at exit (not in the
launcher or compile workers PyTorch starts around the job).
DYNAMO_REPLAY_STRICT=1 makes it strict.
"""

from __future__ import annotations

import atexit
import os
import sys
import warnings

STORE_ENV = "DYNAMO_REPLAY"
STRICT_ENV = "DYNAMO_REPLAY_STRICT"

# Processes PyTorch starts around a job, which import torch with the job's environment but run
# none of its compiles: torchrun's agent (it would take the fleet's lease from its own rank 0,
# and publish an empty entry) and Inductor's compile workers.
_HELPER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "torch._inductor.compile_worker")
_HELPER_SCRIPTS = (
    "/torchrun",
    "torch/distributed/run.py",
    "torch/distributed/launch.py",
    "torch/_inductor/compile_worker/__main__.py",
)


def is_pytorch_helper(command: list[str]) -> bool:
    """Whether the interpreter's command line (sys.orig_argv: `import torch` runs before
    `python -m` sets sys.argv) starts one of PyTorch's helper processes."""
    args = command[1:]
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-m":
            return index + 1 < len(args) and args[index + 1] in _HELPER_MODULES
        if arg == "-c":
            return False
        if arg in ("-X", "-W"):  # an option with its value apart
            index += 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        return arg.replace(os.sep, "/").endswith(_HELPER_SCRIPTS)
    return False


def on_torch_import() -> None:
    path = os.environ.get(STORE_ENV)
    if not path or is_pytorch_helper(getattr(sys, "orig_argv", sys.argv)):
        return
    from dynamo_replay import replay
    from dynamo_replay.errors import ReplayRefusedError

    session = replay(path, strict=os.environ.get(STRICT_ENV) == "1")
    try:
        session.__enter__()
    except ReplayRefusedError:
        raise  # strict: the job asked to fail rather than compile
    except Exception as error:  # anything else: the job must still run
        warnings.warn(f"dynamo-replay: {STORE_ENV}={path} not used: {error!r}", stacklevel=2)
        return
    atexit.register(session.__exit__, None, None, None)
