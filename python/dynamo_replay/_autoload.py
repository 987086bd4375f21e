"""DYNAMO_REPLAY=job.dynrep: replay an unmodified job.

PyTorch calls every entry point in the `torch.backends` group at the end of `import torch`
(its plugin mechanism for out-of-tree backends, on unless TORCH_DEVICE_BACKEND_AUTOLOAD=0).
This package registers `on_torch_import` there: with DYNAMO_REPLAY unset it returns at once;
set, it starts replay for the whole process and prints the summary at exit.
DYNAMO_REPLAY_STRICT=1 makes it strict.
"""

from __future__ import annotations

import atexit
import os
import warnings

STORE_ENV = "DYNAMO_REPLAY"
STRICT_ENV = "DYNAMO_REPLAY_STRICT"


def on_torch_import() -> None:
    path = os.environ.get(STORE_ENV)
    if not path:
        return
    from dynamo_replay.errors import ReplayRefusedError
    from dynamo_replay import replay

    session = replay(path, strict=os.environ.get(STRICT_ENV) == "1")
    try:
        session.__enter__()
    except ReplayRefusedError:
        raise  # strict: the job asked to fail rather than compile
    except Exception as error:  # anything else: the job must still run
        warnings.warn(f"dynamo-replay: {STORE_ENV}={path} not used: {error!r}", stacklevel=2)
        return
    atexit.register(session.__exit__, None, None, None)
