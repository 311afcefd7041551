"""Ops ge declines on purpose, each with the reason its UnsupportedOpError gives (registry.refuse).

ge compiles inference plans whose every node is a function of its inputs: constant folding evaluates
nodes at compile time, runtime_v2 caches a dynamic node's launch by its input shapes and values, and a
plan runs the same on either runtime and any core count. Ops that draw random numbers or update training
state break that contract, so they are refused by name rather than left as "not registered". (The
optimizers Adagrad, Adam and Momentum are plain functions of their inputs: kernels/expanded.py runs them.)
(Dropout with training_mode=1 is the exception the spec's node cases pin down: tensor.py runs it with a
seeded generator, so it stays deterministic for a given seed.)
"""
from __future__ import annotations

from .registry import refuse

_RANDOM = ("draws random numbers: ge plans are deterministic (constant folding, cached launches and both "
           "runtimes assume a node's output depends only on its inputs); generate the values outside the "
           "model and feed them as an input")
_TRAINING = ("a training step (it differentiates the graph): ge compiles inference graphs; export the model for "
             "inference")

refuse(["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"],
       _RANDOM)
refuse("Gradient", _TRAINING, domain="ai.onnx.preview.training")
