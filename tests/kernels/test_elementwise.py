import numpy as np
import pytest
from op_check import check_op

rng = np.random.default_rng(0)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                   ((5,), ()), ((1, 3, 1), (2, 1, 5))])
def test_binary_broadcast(op, sa, sb):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32) + 3
    check_op(op, [a, b])


def test_relu():
    check_op("Relu", [rng.standard_normal((3, 7)).astype(np.float32)])
