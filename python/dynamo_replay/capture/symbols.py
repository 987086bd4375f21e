"""The symbol table of a compile: every symbol its ShapeEnv made, read after the job.

Read at the end rather than when the symbol is made, so each range is the one the compile had
learned by the end (a nonzero count is never negative), not the range at creation.
"""

from __future__ import annotations

from typing import Any


def _bound(value: Any) -> int | float | str:
    """A bound or hint as JSON: an integer, a float (a float symbol's hint), or its text
    (int_oo, sympy's oo)."""
    if getattr(value, "is_Integer", False) or isinstance(value, int):
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError):
            return str(value)
    if getattr(value, "is_Float", False) or isinstance(value, float):
        number = float(value)
        return number if number not in (float("inf"), float("-inf")) and number == number else str(value)
    return str(value)


def symbol_table(shape_env: Any) -> list[dict[str, Any]]:
    hints = getattr(shape_env, "backed_var_to_val", None)
    if hints is None:  # PyTorch before backed_var_to_val
        hints = shape_env.var_to_val
    table = []
    for symbol, value_range in list(shape_env.var_to_range.items()):
        name = str(symbol)
        sources = shape_env.var_to_sources.get(symbol) or []
        entry: dict[str, Any] = {
            "symbol": name,
            "unbacked": name.startswith("u"),
            "range": [_bound(value_range.lower), _bound(value_range.upper)],
        }
        if sources:
            entry["source"] = sources[0].name
        if symbol in hints:
            entry["hint"] = _bound(hints[symbol])
        if (replacement := shape_env.replacements.get(symbol)) is not None:
            entry["replaced_by"] = str(replacement)
        table.append(entry)
    return table
