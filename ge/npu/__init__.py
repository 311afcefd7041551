"""The modelled NPU: device memory, streams, events, engines, traces and a modelled clock (DESIGN.md §8)."""
from .device import Device
from .engines import ENGINES, GE_LOCAL, engine_for_op
from .event import Event
from .sim import ASCEND_910, EngineModel, NpuModel, SimResult, SimTask, compare, simulate
from .stream import Gate, Stream
from .trace import Tracer

__all__ = ["ASCEND_910", "Device", "ENGINES", "EngineModel", "Event", "GE_LOCAL", "Gate", "NpuModel",
           "SimResult", "SimTask", "Stream", "Tracer", "compare", "engine_for_op", "simulate"]
