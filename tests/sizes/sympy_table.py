# Prints the table of replay/query/sizes_test.cc (kSympyTable): each size expression's value as
# sympy and PyTorch's sympy functions compute it, so the C++ evaluator is checked against them.
# Regenerate: .venv-2.15.0/bin/python tests/sizes/sympy_table.py, and paste its output over the table.
import json

import sympy
from torch.utils._sympy import functions as F

# (text, symbol values). Negative operands check floor semantics; PyTorch prints these forms.
CASES = [
    ("s0", "s0=7"),
    ("2*s0", "s0=7"),
    ("s0 + 1", "s0=7"),
    ("2*s0 + 1", "s0=7"),
    ("s0 - s1 - 1", "s0=7,s1=3"),
    ("-s0 + 4", "s0=7"),
    ("4 - s0", "s0=7"),
    ("1 - 2*s0", "s0=7"),
    ("s0*s1 - 2", "s0=7,s1=3"),
    ("s0*(s1 + 1)", "s0=7,s1=3"),
    ("-(s0 + 1)*s1", "s0=7,s1=3"),
    ("s0 - (s1 - 1)", "s0=7,s1=3"),
    ("(s0//2)", "s0=7"),
    ("((s0 + 1)//2)", "s0=7"),
    ("((2*s0)//3)", "s0=7"),
    ("((-s0)//2)", "s0=7"),
    ("-s1 // 2", "s1=3"),
    ("s0//s1", "s0=-7,s1=2"),
    ("s0//s1", "s0=7,s1=-2"),
    ("s0//s1", "s0=-7,s1=-2"),
    ("FloorDiv(s0, s1)", "s0=-7,s1=2"),
    ("CleanDiv(s0, s1)", "s0=12,s1=4"),
    ("s0 % s1", "s0=-7,s1=3"),
    ("Mod(s0, s1)", "s0=-7,s1=3"),
    ("Mod(s0, s1)", "s0=7,s1=-3"),
    ("Mod(s0, s1)", "s0=-7,s1=-3"),
    ("PythonMod(s0, s1)", "s0=-7,s1=3"),
    ("PythonMod(s0, s1)", "s0=7,s1=-3"),
    ("FloorDiv(s0, 2) + Mod(s0, 2)", "s0=7"),
    ("ModularIndexing(s0, 2, 3)", "s0=-7"),
    ("ModularIndexing(s0 + 5, s1, 4)", "s0=30,s1=3"),
    ("CeilDiv(s0, s1)", "s0=7,s1=2"),
    ("CeilDiv(s0, s1)", "s0=-7,s1=2"),
    ("CeilDiv(s0, 4)", "s0=8"),
    ("CeilToInt(IntTrueDiv(s0, 2))", "s0=7"),
    ("CeilToInt(IntTrueDiv(s0, 2))", "s0=-7"),
    ("FloorToInt(IntTrueDiv(s0, 2))", "s0=-7"),
    ("TruncToInt(IntTrueDiv(s0, 2))", "s0=-7"),
    ("TruncToInt(IntTrueDiv(s0, s1))", "s0=7,s1=-2"),
    ("TruncToInt(s0)", "s0=5"),
    ("RoundToInt(s0)", "s0=5"),
    ("s0**2", "s0=7"),
    ("-s0**2", "s0=7"),
    ("(-s0)**2", "s0=7"),
    ("2*s0**2 + 1", "s0=3"),
    ("2**s0", "s0=10"),
    ("2**3**2", ""),
    ("s0**0", "s0=5"),
    ("PowByNatural(s0, s1)", "s0=3,s1=4"),
    ("LShift(s0, s1)", "s0=3,s1=4"),
    ("RShift(s0, s1)", "s0=-100,s1=3"),
    ("Max(1, s1)", "s1=3"),
    ("Max(1, s1)", "s1=-3"),
    ("Min(s0, s1)", "s0=7,s1=3"),
    ("Max(1, s0, s1)", "s0=-4,s1=-2"),
    ("Max(2, Min(s0, s1 - 1))", "s0=7,s1=3"),
    ("Min(Max(s0, 0), Max(s1, 1))", "s0=-5,s1=4"),
    ("Max(1, s0 - Min(s1, 4))", "s0=3,s1=9"),
    ("Eq(s0, 3)", "s0=3"),
    ("Ne(Mod(s0, 2), 0)", "s0=7"),
    ("s0 >= 2", "s0=1"),
    ("2*s0 + 1 < s1", "s0=1,s1=4"),
    ("Where(s0 < 3, s0, s1)", "s0=5,s1=9"),
    ("Where(Eq(s1, 0), 0, s0//s1)", "s0=5,s1=2"),
    ("(s0 + 1)", "s0=1"),
    ("  s0   +1 ", "s0=1"),
    ("u0 + zuf1", "u0=2,zuf1=5"),
    ("9223372036854775807", ""),
]

# Texts the evaluator must refuse, and a word its error names (not computed with sympy).
ERRORS = [
    ("s0 +", "s0=1", "unexpected end"),
    ("(s0 + 1", "s0=1", "expected ')'"),
    ("s0 + 1)", "s0=1", "unexpected ')'"),
    ("Max(s0,", "s0=1", "unexpected end"),
    ("s0 ** ", "s0=1", "unexpected end"),
    ("", "", "unexpected end"),
    ("s0 s1", "s0=1,s1=2", "unexpected 's1'"),
    ("s0 / 2", "s0=4", "true division"),
    ("2.5*s0", "s0=4", "float"),
    ("TruncToFloat(s0)", "s0=4", "unsupported function TruncToFloat"),
    ("IntTrueDiv(s0, 2)", "s0=4", "IntTrueDiv"),
    ("RoundToInt(IntTrueDiv(s0, 2))", "s0=4", "unsupported function RoundToInt"),
    ("IsNonOverlappingAndDenseIndicator(s0, 1)", "s0=4", "unsupported function IsNonOverlappingAndDenseIndicator"),
    ("FloorDiv(s0)", "s0=4", "FloorDiv takes 2 arguments"),
    ("ModularIndexing(s0, 2)", "s0=4", "ModularIndexing takes 3 arguments"),
    ("int_oo", "", "unbounded"),
    ("s0 // s1", "s0=4,s1=0", "division by zero"),
    ("Mod(s0, 0)", "s0=4", "modulo by zero"),
    ("s0**s1", "s0=2,s1=-1", "negative exponent"),
    ("s0*s0", "s0=4294967296", "outside int64"),
    ("99999999999999999999", "", "outside int64"),
    ("s2 + 1", "", "--sizes s2=N"),
]

# Sympy's Mod (floor modulo) for `Mod`: PyTorch's own Mod asserts non-negative operands.
# PyTorch's CeilDiv is FloorDiv(a + b - 1, b), a ceiling only for b > 0; the evaluator's is
# the ceiling for every sign, so the table takes it from sympy.ceiling.
NAMES = {
    "FloorDiv": F.FloorDiv,
    "CleanDiv": F.CleanDiv,
    "CeilDiv": lambda a, b: sympy.ceiling(sympy.Rational(1) * a / b),
    "Mod": sympy.Mod,
    "PythonMod": F.PythonMod,
    "ModularIndexing": F.ModularIndexing,
    "Max": F.Max,
    "Min": F.Min,
    "CeilToInt": F.CeilToInt,
    "FloorToInt": F.FloorToInt,
    "TruncToInt": F.TruncToInt,
    "RoundToInt": F.RoundToInt,
    "IntTrueDiv": F.IntTrueDiv,
    "PowByNatural": F.PowByNatural,
    "LShift": F.LShift,
    "RShift": F.RShift,
    "Where": F.Where,
    "Eq": sympy.Eq,
    "Ne": sympy.Ne,
}


def values(sizes):
    return {name: int(v) for name, v in (item.split("=") for item in sizes.split(",") if item)}


def sympy_value(text, sizes):
    # Values go in as integers before evaluation: Where and the *ToInt functions need them.
    local = dict(NAMES)
    local.update({name: sympy.Integer(v) for name, v in values(sizes).items()})
    result = sympy.parse_expr(text.strip(), local_dict=local)
    if result in (sympy.true, sympy.false):
        return int(bool(result))
    assert result.is_Integer, (text, sizes, result)
    return int(result)


def main():
    print(f"    // Generated by tests/sizes/sympy_table.py (sympy {sympy.__version__}): text, symbol values, value.")
    for text, sizes in CASES:
        print(f"    {{{json.dumps(text)}, {json.dumps(sizes)}, {sympy_value(text, sizes)}, nullptr}},")
    print("    // Refused: text, symbol values, a part of the error.")
    for text, sizes, error in ERRORS:
        print(f"    {{{json.dumps(text)}, {json.dumps(sizes)}, 0, {json.dumps(error)}}},")


if __name__ == "__main__":
    main()
