"""fold_symbolic: the exporters' shape arithmetic over symbolic sizes (names and simple expressions of them,
ge/ir/symbolic.py), for the parts of a graph whose input shapes are not all fixed.

ONNX exports compute reshape targets, masks and position ids from the input sizes at run time: Shape ->
Gather -> Unsqueeze -> Concat -> Reshape, Range(0, Shape[1]), ConstantOfShape / Expand of a shape, and
Where(Equal(shape, -1), 1, shape). With every input shape fixed fold_constants folds all of it (Shape of a
static value is a constant); with symbolic inputs this pass carries the values as expressions, so
- a shape value whose elements all turn out constant (Shape(x)[2] where dim 2 is static) folds to a constant;
- the ops that read a shape value (Reshape, Expand, ConstantOfShape, Range) get symbolic output shapes
  ("batch*sequence", "past+sequence") instead of the frontend's fresh unknowns, and so do the ops whose
  shapes follow their inputs' (elementwise, MatMul, Transpose, Gather, Concat...), where the kernels' infer
  (static shapes only) cannot run.
A value computed from data (NonZero, a fed tensor, a ReduceMax) has no symbolic value: the nodes it feeds
stay dynamic, and ge.dynamic_reasons says which and why.

Step 1: the symbolic value (`Value.sym`) of each small integer output, from its inputs' values or shapes.
Step 2: all-int values fold to constants.
Step 3: symbolic output shapes where the node's shapes are not static.
"""
from __future__ import annotations

import numpy as np

from ..ir.symbolic import Expr, never_negative, product

FRESH = "unk__"   # the ONNX frontend's name for a size nothing names (ge/frontends/onnx.py)
MAX_ELEMS = 16   # shape values are short; a longer integer tensor is data
SAME_SHAPE = {"Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Softmax",
              "LogSoftmax", "Cast", "Not", "IsNaN", "IsInf", "Identity", "Gelu", "LayerNormalization", "Dropout",
              "Floor", "Ceil", "Round", "Sign", "CumSum", "HardSigmoid", "LeakyRelu", "Elu", "Softplus", "Mish"}
BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
             "And", "Or", "Xor", "Max", "Min", "Where", "Mod", "BitShift"}


def sym_of(v) -> tuple | None:
    """A value's elements as ints / dim strings: a small integer or boolean constant, or what Step 1 found."""
    if v is None:
        return None
    if v.const is not None:
        a = v.const
        if a.ndim <= 1 and a.size <= MAX_ELEMS and (a.dtype.kind in "iub"):
            return tuple(a.ravel().tolist())
        return None
    return v.sym


# -- Step 1: values ----------------------------------------------------------------------------------------

def _binary(op: str, a, b):
    if a is None or b is None:
        return None
    if len(a) != len(b):
        if len(a) == 1:
            a = a * len(b)
        elif len(b) == 1:
            b = b * len(a)
        else:
            return None
    out = []
    for x, y in zip(a, b):
        r = _element(op, x, y)
        if r is None:
            return None
        out.append(r)
    return tuple(out)


def _element(op: str, x, y):
    if op == "Equal":
        if isinstance(x, (int, bool)) and isinstance(y, (int, bool)):
            return x == y
        if x == y:
            return True
        if isinstance(y, int) and y < 0 and never_negative(x) or isinstance(x, int) and x < 0 and never_negative(y):
            return False
        return None
    if isinstance(x, bool) or isinstance(y, bool):
        return None
    ex, ey = Expr.of(x), Expr.of(y)
    if op == "Add":
        return (ex + ey).dim
    if op == "Sub":
        return (ex - ey).dim
    if op == "Mul":
        return (ex * ey).dim
    if op == "Div":
        if ex.is_const and ey.is_const:
            return int(ex.const / ey.const) if ey.const else None   # ONNX integer Div truncates
        q = ex.exact_div(ey)
        return None if q is None else q.dim
    if op in ("Max", "Min") and ex.is_const and ey.is_const:
        return (max if op == "Max" else min)(ex.const, ey.const)
    return None


def _slice(data, node, ins) -> tuple | None:
    starts, ends = sym_of(ins[1]), sym_of(ins[2])
    axes = sym_of(ins[3]) if len(ins) > 3 and ins[3] is not None else (0,)
    steps = sym_of(ins[4]) if len(ins) > 4 and ins[4] is not None else (1,)
    vals = (starts, ends, axes, steps)
    if any(x is None or len(x) != 1 or not isinstance(x[0], int) for x in vals) or axes[0] not in (0, -1):
        return None
    if steps[0] == 0:
        return None
    return tuple(data[slice(starts[0], ends[0], steps[0])])


def _value(node, ins) -> tuple | None:
    """The output's elements (Step 1), or None."""
    op, x = node.op_type, sym_of(ins[0]) if ins else None
    if op == "Shape":
        shape = ins[0].shape
        if shape is None:
            return None
        rank = len(shape)
        start, end = node.attrs.get("start", 0), node.attrs.get("end", rank)
        start, end = (min(max(d + rank if d < 0 else d, 0), rank) for d in (start, end))
        return tuple(shape[start:end])
    if op == "Size":
        return None if ins[0].shape is None else (product(ins[0].shape).dim,)
    if op == "Gather" and x is not None and node.attrs.get("axis", 0) == 0:
        idx = sym_of(ins[1])
        if idx is None or not all(isinstance(i, int) and -len(x) <= i < len(x) for i in idx):
            return None
        return tuple(x[i] for i in idx)
    if op in ("Unsqueeze", "Squeeze", "Identity", "Reshape", "Flatten") and x is not None:
        return x
    if op == "Cast" and x is not None and np.dtype(node.outputs[0].dtype or np.int64).kind in "iu":
        return None if any(isinstance(e, bool) for e in x) else x
    if op == "Concat" and node.attrs.get("axis", 0) in (0, -1):
        parts = [sym_of(v) for v in ins]
        return None if any(p is None for p in parts) else tuple(e for p in parts for e in p)
    if op == "Slice" and x is not None:
        return _slice(x, node, ins)
    if op in ("Add", "Sub", "Mul", "Div", "Equal", "Max", "Min") and len(ins) == 2:
        return _binary(op, x, sym_of(ins[1]))
    if op == "Where":
        cond, a, b = (sym_of(v) for v in ins)
        if cond is None or a is None or b is None or not all(isinstance(c, bool) for c in cond):
            return None
        n = max(len(cond), len(a), len(b))
        pick = [(cond * n if len(cond) == 1 else cond), (a * n if len(a) == 1 else a), (b * n if len(b) == 1 else b)]
        if any(len(p) != n for p in pick):
            return None
        return tuple(y if c else z for c, y, z in zip(*pick))
    return None


# -- Step 3: shapes ----------------------------------------------------------------------------------------

def _broadcast(shapes) -> tuple | None:
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            ints = {d for d in dims if isinstance(d, int)}
            if len(ints) != 1:
                return None   # two different symbols: equal at run time, but which one to name is a guess
            dims = ints
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _reshape(shape, target, allowzero: bool) -> tuple | None:
    out, free = [], None
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if shape is None or i >= len(shape):
                return None
            d = shape[i]
        if d == -1:
            free = i
        elif isinstance(d, int) and d < 0:
            return None
        out.append(d)
    if free is not None:
        if shape is None:
            return None
        rest = product(d for i, d in enumerate(out) if i != free)
        q = product(shape).exact_div(rest) if rest.terms else None
        if q is None:
            return None
        out[free] = q.dim
    return tuple(out)


def _shape(node, ins) -> tuple | None:
    """The output 0 shape (Step 3), or None."""
    op = node.op_type
    s0 = ins[0].shape if ins and ins[0] is not None else None
    if op in ("Reshape", "Expand", "ConstantOfShape"):
        target = sym_of(ins[1] if op != "ConstantOfShape" else ins[0])
        if target is None or any(isinstance(d, bool) for d in target):
            return None
        if op == "ConstantOfShape":
            return target
        if op == "Expand":
            return _broadcast([s0, target])
        return _reshape(s0, target, bool(node.attrs.get("allowzero", 0)))
    if op == "Range":
        start, limit, delta = (sym_of(v) for v in ins)
        if None in (start, limit, delta) or delta != (1,):
            return None
        n = Expr.of(limit[0]) - Expr.of(start[0])
        return (n.dim,) if not n.is_const or n.const >= 0 else (0,)
    if op in SAME_SHAPE:
        return s0
    if op in BROADCAST:
        return _broadcast([v.shape for v in ins if v is not None])
    if op == "MatMul" and s0 is not None and ins[1].shape is not None and min(len(s0), len(ins[1].shape)) >= 2:
        s1 = ins[1].shape
        batch = _broadcast([s0[:-2], s1[:-2]])
        return None if batch is None else (*batch, s0[-2], s1[-1])
    if op == "Flatten" and s0 is not None:
        axis = node.attrs.get("axis", 1) % (len(s0) + 1) if s0 else 0
        return (product(s0[:axis]).dim, product(s0[axis:]).dim)
    if op == "Gemm" and s0 is not None and ins[1].shape is not None and len(s0) == len(ins[1].shape) == 2:
        m = s0[1] if node.attrs.get("transA", 0) else s0[0]
        n = ins[1].shape[0] if node.attrs.get("transB", 0) else ins[1].shape[1]
        return (m, n)
    if op == "Transpose" and s0 is not None:
        perm = node.attrs.get("perm") or list(range(len(s0)))[::-1]
        return tuple(s0[p] for p in perm)
    if op == "Gather" and s0 is not None and ins[1].shape is not None:
        axis = node.attrs.get("axis", 0) % len(s0)
        return (*s0[:axis], *ins[1].shape, *s0[axis + 1:])
    if op == "Unsqueeze" and s0 is not None:
        axes = sym_of(ins[1]) if len(ins) > 1 else tuple(node.attrs.get("axes", ()))
        if not axes or not all(isinstance(a, int) for a in axes):
            return None
        rank = len(s0) + len(axes)
        axes = sorted(a % rank for a in axes)
        out, it = [], iter(s0)
        for i in range(rank):
            out.append(1 if i in axes else next(it))
        return tuple(out)
    if op == "Concat" and all(v is not None and v.shape is not None for v in ins) and len(ins) > 0:
        axis = node.attrs.get("axis", 0) % len(s0)
        total = Expr.of(0)
        for v in ins:
            total = total + Expr.of(v.shape[axis])
        return (*s0[:axis], total.dim, *s0[axis + 1:])
    return None


def fold_symbolic(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.domain not in ("", "ai.onnx") or node.bodies:
            continue
        ins = node.inputs
        out = node.outputs[0] if node.outputs else None
        if out is None or out.kind != "tensor":
            continue
        # Step 1: the value
        elems = _value(node, ins) if (out.shape is None or len(out.shape) <= 1) else None
        if elems is not None and len(elems) <= MAX_ELEMS:
            # Step 2: every element known (and the value's rank): a constant
            if all(isinstance(e, (int, bool)) for e in elems) and out.dtype is not None \
                    and out.shape is not None and all(isinstance(d, int) for d in out.shape):
                array = np.array(elems, dtype=out.dtype)
                if array.size == int(np.prod(out.shape)):
                    graph.fold_node(node, [array.reshape(out.shape)])
                    changed = True
                    continue
            if out.sym != elems:
                out.sym, changed = elems, True
        # Step 3: the output shape, where it is not static
        if out.shape is not None and all(isinstance(d, int) for d in out.shape):
            continue
        shape = _merge(out.shape, _shape(node, ins))
        if shape != out.shape:
            out.shape, changed = shape, True
    return changed


def _merge(old, new):
    """The shape known so far and the one computed: a size beats a symbol, a computed symbol beats the
    frontend's fresh unknown (onnx.shape_inference's "unk__N"), a declared name stays."""
    if new is None or old is None:
        return old if new is None else tuple(new)
    if len(old) != len(new):
        return old
    return tuple(o if isinstance(o, int) or not isinstance(n, int) and not _fresh(o) else n
                 for o, n in zip(old, new))


def _fresh(d) -> bool:
    return isinstance(d, str) and d.startswith(FRESH)
