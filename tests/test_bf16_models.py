"""allow_mix_precision_bf16 on the random-weight light ResNet-50 with AVX512-BF16 convs (conv_bf16.py): every
Conv runs in bfloat16 and the top-1 class is float32's (bench/precision_modes.py --speed times it)."""
import numpy as np
import pytest

import ge
from ge.kernels import conv_bf16
from ge.zoo import with_random_weights


@pytest.mark.skipif(not conv_bf16.HAS_BF16, reason="this CPU has no AVX512_BF16")
def test_resnet50_bf16_keeps_top1():
    model = with_random_weights("resnet50")
    f32 = ge.Session(model, runtime="v2")
    plan = ge.compile(model, ge.Options(precision_mode="allow_mix_precision_bf16"))
    ops = [n.op_type for n in plan.nodes]
    assert ops.count("ConvBF16") == 53 and "FusedConv" not in ops
    bf16 = ge.Session(plan, runtime="v1")
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = {"gpu_0/data_0": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
        want, got = f32.run(None, x)[0], bf16.run(None, x)[0]
        assert got.dtype == np.float32 and got.argmax() == want.argmax()
