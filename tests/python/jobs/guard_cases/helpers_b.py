"""A second user module with the same names as helpers_a, other behaviour."""

SCALE = 3.0


def ops(x):
    return x * 3.0
