"""Execution providers as a CPU build of onnxruntime names them.

ge runs every model on its modelled NPU over the host's CPUs, so it answers as onnxruntime's CPU package
does: the one available provider is CPUExecutionProvider (ge's own name, GEExecutionProvider, is accepted as
the same). A session asked for a provider it has not (CUDA, TensorRT...) warns as onnxruntime does and runs
on the CPU; `set_providers` with a name no onnxruntime build knows raises, as onnxruntime's does.
"""
from __future__ import annotations

import warnings

from ..errors import InputError, UsageError

CPU = "CPUExecutionProvider"
ALIASES = ("GEExecutionProvider",)
# every provider an onnxruntime build may have (onnxruntime.get_all_providers(), 1.32), CPU last
ALL_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider",
                 "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider",
                 "QNNExecutionProvider", "NnapiExecutionProvider", "VSINPUExecutionProvider",
                 "JsExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider",
                 "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider",
                 "XnnpackExecutionProvider", "CANNExecutionProvider", "AzureExecutionProvider", CPU)


def normalize(providers, provider_options) -> dict[str, dict]:
    """{provider name: its options as strings} from onnxruntime's two spellings: names with a parallel
    list of option dicts, or (name, options) pairs."""
    providers = list(providers or ())
    if provider_options is not None and len(provider_options) != len(providers):
        raise InputError("'providers' and 'provider_options' should be the same length if both are given")
    out = {}
    for k, p in enumerate(providers):
        if isinstance(p, tuple):
            if len(p) != 2 or not isinstance(p[0], str) or not isinstance(p[1], dict):
                raise InputError(f"providers[{k}]: a (name, options dict) pair, not {p!r:.60}")
            name, opts = p
        elif isinstance(p, str):
            name, opts = p, provider_options[k] if provider_options is not None else {}
        else:
            raise InputError(f"providers[{k}] must be a name or a (name, options) pair, not {type(p).__name__}")
        if name in out:
            raise InputError(f"'{name}' is named twice in providers")
        out[name] = {str(key): str(value) for key, value in (opts or {}).items()}
    return out


def check_providers(names, *, strict: bool = False) -> None:
    """Warn (onnxruntime's words) for each provider this build has not; `strict` (set_providers) raises for a
    name no build knows."""
    for name in names:
        if name == CPU or name in ALIASES:
            continue
        if strict and name not in ALL_PROVIDERS:
            raise UsageError(f"Unknown Provider Type: {name}")
        warnings.warn(f"Specified provider '{name}' is not in available provider names."
                      f"Available providers: '{CPU}'", stacklevel=3)


def cpu_options(requested: dict[str, dict]) -> dict[str, dict]:
    """What get_provider_options reports: the CPU provider with the options given for it."""
    opts = {}
    for name, o in requested.items():
        if name == CPU or name in ALIASES:
            opts.update(o)
    return {CPU: opts}
