"""A user module whose attribute a job may change after import (swapped_job.py)."""

import torch

act = torch.relu
