"""Small PyTorch networks for the torch.compile backend's tests and bench/torch_compile.py, written here
(torchvision does not import beside the CPU torch wheel the dev venv has): ResNet-18's and MobileNetV2's
layer plans (He et al. 2015; Sandler et al. 2018) at any width, and transformers' BERT / GPT-2 configs
with random weights."""
from __future__ import annotations

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18: a 7x7 stem, max pool, four stages of two basic blocks, global average pool, FC."""

    def __init__(self, width: int = 64, classes: int = 1000):
        super().__init__()
        w = [width, width * 2, width * 4, width * 8]
        self.stem = nn.Sequential(nn.Conv2d(3, w[0], 7, 2, 3, bias=False), nn.BatchNorm2d(w[0]),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], w[0]
        for i, c in enumerate(w):
            blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
            cin = c
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(w[-1], classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def _conv_bn(cin, cout, k, stride, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return layers + [nn.ReLU6(inplace=True)] if act else layers


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = _conv_bn(cin, hidden, 1, 1) if expand != 1 else []
        layers += _conv_bn(hidden, hidden, 3, stride, groups=hidden) + _conv_bn(hidden, cout, 1, 1, act=False)
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """MobileNetV2: (expansion, channels, repeats, stride) per stage, ReLU6, dropout before the classifier."""
    PLAN = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
            (6, 320, 1, 1)]

    def __init__(self, width: float = 1.0, classes: int = 1000):
        super().__init__()
        c = lambda n: max(8, int(n * width + 4) // 8 * 8)  # noqa: E731 - channels rounded to 8
        cin, layers = c(32), _conv_bn(3, c(32), 3, 2)
        for t, ch, n, s in self.PLAN:
            for i in range(n):
                layers.append(InvertedResidual(cin, c(ch), s if i == 0 else 1, t))
                cin = c(ch)
        layers += _conv_bn(cin, c(1280), 1, 1)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(c(1280), classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def bert(layers=2, hidden=64, heads=4, vocab=512, seed=0):
    """transformers' BertModel, random weights, eval mode, eager attention."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=hidden * 4, max_position_embeddings=128, attn_implementation="eager")
    return BertModel(cfg).eval()


def gpt2(layers=2, hidden=64, heads=4, vocab=512, seed=0):
    """transformers' GPT2LMHeadModel, random weights, eval mode, eager attention, no KV cache."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads, n_positions=128,
                     use_cache=False, attn_implementation="eager")
    return GPT2LMHeadModel(cfg).eval()
