"""Stands for a third-party library that user programs call: its data-dependent branches are
fixed in the library (guard_or_false), not in the user's code."""
