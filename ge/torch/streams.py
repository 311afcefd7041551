"""Multi-stream scopes: `with ge.torch.stream_scope("side"):` (TorchAir's `npu_stream_switch(stream_tag)`).

What TorchAir does on the NPU: the ops traced inside the scope carry the user stream label
`_user_stream_label = stream_tag`, and GE's stream allocator puts each label on a stream of its own (its
AssignByLabelPass), with events wherever data crosses streams; work the scope holds runs beside the main stream.

Here: Step 1, the scope is torch's `torch.fx.traceback.annotate({"ge_stream": name})`, which Dynamo traces
(no graph break) and AOTAutograd carries to every ATen node made inside it, as `node.meta["custom"]`.
Step 2, each ge node a converter makes for such an FX node gets the attribute `_stream_label = name`
(registry.Builder.op), which ge's stream allocator honours (ge/schedule/stream_allocator.py, Step 0: one fresh
stream per distinct label, never reused by unlabelled nodes; events where data crosses). Scopes nest: the
innermost name wins. The label is part of the compile cache's key (the same graph with other scopes is
another plan). Retraces per shape or per gear keep the labels (specialize.retrace).

runtime_v1 ("max-autotune") has its AI cores pull the streams, runtime_v2 ("reduce-overhead") a host thread
per stream (docs/streams.md). `ge.torch.explain` lists each plan's streams.
"""
from __future__ import annotations

import torch

from ..errors import GEError

KEY = "ge_stream"   # node.meta["custom"][KEY]: the scope's name


def stream_scope(name: str):
    """A context manager: the ops traced inside run on a stream of their own named `name` (TorchAir's
    npu_stream_switch). Outside torch.compile it does nothing (eager PyTorch has no ge streams)."""
    if not isinstance(name, str) or not name:
        raise GEError(f"ge.torch.stream_scope needs a non-empty stream name, got {name!r}")
    return torch.fx.traceback.annotate({KEY: name})


def stream_label(node) -> str | None:
    """The stream scope an FX node was traced in, if any."""
    custom = node.meta.get("custom") if node is not None else None
    return custom.get(KEY) if isinstance(custom, dict) else None
