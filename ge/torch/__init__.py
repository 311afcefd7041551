"""ge.torch: `torch.compile(model, backend="ge")`, PyTorch models straight into ge's plans (GE's TorchAir).

    import ge.torch
    model = torch.compile(model, backend=ge.torch.get_backend(ge.torch.CompilerConfig(mode="max-autotune")))
    with torch.no_grad():
        y = model(x)

Dynamo's graph goes through AOTAutograd's inference path into core ATen, then converter by converter
(registry.py, ops_nn.py, ops_tensor.py) into ge's IR, with no ONNX between; ops ge cannot run exactly stay
in PyTorch (a graph break with the reason logged on logger "ge.torch"), or are an UnsupportedOpError under
fullgraph=True. Installed (`pip install "ge-runtime[torch]"`), the backend is also found by name, "ge"
(entry point group torch_dynamo_backends).

Files: config.py (CompilerConfig), backend.py (the Dynamo backend), partition.py (which nodes ge runs, the
graph breaks), convert.py (ATen FX -> ir.Graph), runtime.py (a Session called with tensors), gears.py
(set_dim_gears), cache.py (the compile cache across processes), streams.py (stream_scope), explain.py
(ge.torch.explain).
"""
from .backend import backend, get_backend
from .config import CompilerConfig
from .explain import explain
from .gears import set_dim_gears
from .registry import CONVERTERS, Unsupported, converter
from .streams import stream_scope

__all__ = ["backend", "get_backend", "CompilerConfig", "set_dim_gears", "stream_scope", "explain", "CONVERTERS", "converter", "Unsupported"]
