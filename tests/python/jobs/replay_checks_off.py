"""python -m dynamo_replay, with replay's own frame checks switched off (FrameChecks(enabled=False)):
what PyTorch's saved frames alone would do. Only the tests that prove each check matters use it.
Usage: replay_checks_off.py replay STORE JOB [ARGS...]"""

import sys

from dynamo_replay import __main__ as cli
from dynamo_replay.replay import frame_checks

_init = frame_checks.FrameChecks.__init__
frame_checks.FrameChecks.__init__ = lambda self, data, enabled=True: _init(self, data, enabled=False)
sys.exit(cli.main(sys.argv[1:]))
