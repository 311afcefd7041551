"""onnxruntime.capi.onnxruntime_inference_collection's classes."""
from ..iobinding import IOBinding  # noqa: F401
from ..ortvalue import OrtValue  # noqa: F401
from ..session import InferenceSession  # noqa: F401
from ..session import InferenceSession as Session  # noqa: F401

import warnings as _warnings
from collections.abc import Sequence as _Sequence


def check_and_normalize_provider_args(providers, provider_options, available_provider_names):
    """(names, options) from onnxruntime's spellings of providers: names, (name, options) pairs, or names with
    a parallel list of option dicts; options become {str: str}. A name given twice is dropped after a
    UserWarning (the first stays); a malformed argument is a ValueError. Names are not checked against
    `available_provider_names` (InferenceSession warns for those it has not)."""
    if providers is None:
        return [], []
    if not isinstance(providers, _Sequence) or isinstance(providers, str):
        raise ValueError("'providers' should be a sequence")
    if provider_options is not None:
        if not isinstance(provider_options, _Sequence) or isinstance(provider_options, str):
            raise ValueError("'provider_options' should be a sequence")
        if len(provider_options) != len(providers):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given")
        if any(isinstance(p, tuple) for p in providers):
            raise ValueError("Only one of 'providers' and 'provider_options' may specify provider options")
        pairs = list(zip(providers, provider_options))
    else:
        pairs = [p if isinstance(p, tuple) else (p, {}) for p in providers]
    names, options = [], []
    for item in pairs:
        if len(item) != 2:
            raise ValueError(f"a provider with options is a (name, dict) pair, not {item!r:.60}")
        name, opts = item
        if not isinstance(name, str):
            raise ValueError(f"a provider name must be a str, not {type(name).__name__}")
        if not isinstance(opts, dict):
            raise ValueError(f"provider options must be a dict, not {type(opts).__name__}")
        if name in names:
            _warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", UserWarning, stacklevel=2)
            continue
        names.append(name)
        options.append({str(k): str(v) for k, v in opts.items()})
    return names, options
