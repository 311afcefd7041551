"""Converters the held-out set (tools/torch_heldout.py) found missing: each against eager, fullgraph=True, float32
(kernels the other tests compile already, but ArgMax of int64)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", minversion="2.1")

from torch import nn  # noqa: E402

from torch_checks import close, compiled  # noqa: E402


def _check(model, *args):
    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():
        ref = model(*args)
        y = compiled(model, fullgraph=True)(*args)
    close(y, ref)


def test_conv1d_as_a_2d_conv_of_height_one():
    # Whisper's and Wav2Vec2's front ends, SqueezeBERT's and ConvBERT's 1-D convolutions
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv1d(4, 6, 3, stride=2, padding=1)
            self.b = nn.Conv1d(6, 6, 3, padding=2, dilation=2, groups=3, bias=False)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))
    torch.manual_seed(0)
    _check(Net(), torch.randn(2, 4, 17))


def test_group_norm():
    # PoolFormer's GroupNorm(1, C), Wav2Vec2's GroupNorm(C, C) over time
    torch.manual_seed(0)
    net = nn.Sequential(nn.GroupNorm(2, 6), nn.GroupNorm(6, 6), nn.GroupNorm(1, 6, affine=False))
    for m in net[:2]:
        nn.init.normal_(m.weight)
        nn.init.normal_(m.bias)
    _check(net, torch.randn(2, 6, 5, 3) * 3 + 1)


def test_vector_norm_orders_one_and_two():
    # ConvNeXtV2's GRN and Swinv2's cosine attention (F.normalize)
    class Net(nn.Module):
        def forward(self, x):
            return torch.nn.functional.normalize(x, dim=-1) + torch.linalg.vector_norm(x, 1, dim=(1, 2),
                                                                                     keepdim=True)
    _check(Net(), torch.randn(2, 3, 4, 5))


def test_argmax_of_integers():
    # CLIP's text model picks the end-of-text token's position with input_ids.argmax(-1)
    class Net(nn.Module):
        def forward(self, ids, x):
            return x[torch.arange(ids.shape[0]), ids.argmax(dim=-1)] + ids.argmax()
    ids = torch.tensor([[3, 9, 9, 1], [7, 2, 0, 7]])
    _check(Net(), ids, torch.randn(2, 4, 3))


def test_indexing_axes_that_are_not_the_leading_ones():
    # YOLOS' and ConvBERT's x[:, i, j]: adjacent index tensors keep their place; apart, they lead
    class Net(nn.Module):
        def forward(self, x, i, j):
            return x[:, i, j].sum() + x[:, :, j, i].sum(dim=0) + x[i, :, j].mean()
    i, j = torch.tensor([[0, 2], [1, 1]]), torch.tensor([1, 3])
    _check(Net(), torch.randn(3, 4, 5, 6), i, j)


def test_tensors_made_in_forward_are_constants():
    # DeBERTa-v2's torch.tensor(...) in forward reaches the ATen graph as a get_attr
    class Net(nn.Module):
        def forward(self, x):
            return x * torch.tensor([1.5, -2.0, 0.25]) + torch.sqrt(torch.tensor(4.0))
    _check(Net(), torch.randn(2, 3))


def test_slice_scatter_and_a_number_to_a_tensor_power():
    # Funnel's pooling: out[:, :1] = cls; its relative positions: 10000 ** (-x)
    class Net(nn.Module):
        def forward(self, x, cls):
            y = torch.slice_scatter(x, cls, dim=1, start=0, end=1)
            y = torch.slice_scatter(y, cls * 2, dim=1, start=2, end=3)
            return torch.slice_scatter(y, y[:, -2:] + 1, dim=1, start=-2) * 2.0 ** (-x)
    _check(Net(), torch.randn(2, 5, 3), torch.randn(2, 1, 3))
