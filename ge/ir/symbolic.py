"""Symbolic dimensions: a dim is an int, or a string naming a size known only at run time. The strings are
names ("batch") or, where shape arithmetic combined them, canonical polynomials with integer coefficients
("batch*sequence", "past+sequence", "2*sequence-1"): the sums, products and exact quotients ONNX exports make
of their input sizes. `Expr` is that polynomial; `Expr.of(dim)` reads a dim, `expr.dim` writes one (an int
when the polynomial is a constant), so equal sizes print equal and one string compares as one value.

A dim string outside the grammar (a dim_param such as "past_sequence + 1" spelled by an exporter) is one
opaque name. A quotient that does not divide exactly, a negative or a data-dependent size is not an Expr:
the operations return None and the caller keeps the size unknown.
"""
from __future__ import annotations

import re

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TERM = re.compile(rf"([+-]?)(\d+)?((?:\*?{_NAME})*)")
_CANON = re.compile(rf"^[+-]?(\d+|(\d+\*)?{_NAME}(\*{_NAME})*)([+-](\d+|(\d+\*)?{_NAME}(\*{_NAME})*))*$")


class Expr:
    """A polynomial over size names: {monomial (sorted names, repeated for powers): coefficient}."""
    __slots__ = ("terms",)

    def __init__(self, terms: dict):
        self.terms = {m: c for m, c in terms.items() if c}

    @staticmethod
    def of(dim) -> "Expr":
        if not isinstance(dim, str):   # int, numpy integer
            return Expr({(): int(dim)})
        text = str(dim)
        if not _CANON.match(text):
            return Expr({(text,): 1})
        terms: dict = {}
        for sign, coef, names in _TERM.findall(text.replace(" ", "")):
            if not coef and not names:
                continue
            mono = tuple(sorted(n for n in names.split("*") if n))
            terms[mono] = terms.get(mono, 0) + (-1 if sign == "-" else 1) * int(coef or 1)
        return Expr(terms)

    @property
    def is_const(self) -> bool:
        return all(m == () for m in self.terms)

    @property
    def const(self) -> int:
        return self.terms.get((), 0)

    @property
    def dim(self):
        """The dim this size is: an int when constant, else the canonical string."""
        if self.is_const:
            return self.const
        parts = []
        for mono in sorted(self.terms, key=lambda m: (-len(m), m)):
            c = self.terms[mono]
            body = "*".join(mono) if mono else str(abs(c))
            if mono and abs(c) != 1:
                body = f"{abs(c)}*{body}"
            parts.append(("-" if c < 0 else "+") + body)
        text = "".join(parts)
        return text[1:] if text.startswith("+") else text

    def __add__(self, other: "Expr") -> "Expr":
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Expr(terms)

    def __neg__(self) -> "Expr":
        return Expr({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: "Expr") -> "Expr":
        return self + (-other)

    def __mul__(self, other: "Expr") -> "Expr":
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Expr(terms)

    def exact_div(self, other: "Expr") -> "Expr | None":
        """self / other when other is one term (c * names) dividing every term of self exactly, else None."""
        if len(other.terms) != 1:
            return None
        (mono, c), = other.terms.items()
        out = {}
        for m, k in self.terms.items():
            rest = list(m)
            for name in mono:
                if name not in rest:
                    return None
                rest.remove(name)
            if k % c:
                return None
            out[tuple(rest)] = k // c
        return Expr(out)

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.terms.items())))

    def __repr__(self) -> str:
        return f"Expr({self.dim!r})"


def product(dims) -> "Expr":
    out = Expr({(): 1})
    for d in dims:
        out = out * Expr.of(d)
    return out


def never_negative(dim) -> bool:
    """A size (a name, or a polynomial whose coefficients are all positive) is never negative: Equal(dim, -1)
    is False, as in the exporters' Where(Equal(shape, -1), ones, shape)."""
    return all(c > 0 for c in Expr.of(dim).terms.values())
