"""ge as an onnx.backend.base.Backend, so ONNX's own backend tests and node cases run against it."""
from __future__ import annotations

import numpy as np
from onnx.backend.base import Backend, BackendRep

from .api import Session


class GEBackendRep(BackendRep):
    def __init__(self, session: Session):
        self.session = session

    def run(self, inputs, **kwargs):
        names = [i.name for i in self.session.get_inputs()]
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(names, inputs))
        # sequences (lists) and empty optionals (None) pass as they are
        return tuple(self.session.run(None, {k: v if v is None or isinstance(v, list) else np.asarray(v)
                                             for k, v in feeds.items()}))


class GEBackend(Backend):
    @classmethod
    def prepare(cls, model, device: str = "CPU", runtime: str = "auto", options=None, **kwargs):
        super().prepare(model, device, **kwargs)
        return GEBackendRep(Session(model, runtime=runtime, options=options))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper().startswith("CPU")


prepare = GEBackend.prepare
run_model = GEBackend.run_model
supports_device = GEBackend.supports_device
