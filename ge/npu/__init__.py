"""The modelled NPU, the floor both runtimes stand on: device memory, AI cores, engines, kernel-launch
thunks, stream programs, instance pools, streams, events, traces and a modelled clock (ARCHITECTURE.md)."""
from . import jitcache  # noqa: F401  (first: the cache stamps of the jitted modules imported below)
from .aicore import AICores, team
from .device import Device
from .engines import ENGINES, GE_LOCAL, engine_for_op
from .event import Event
from .memory import ALIGN, DeviceMemory
from .sim import ASCEND_910, EngineModel, NpuModel, SimResult, SimTask, compare, simulate
from .stream import Gate, Stream
from .trace import Tracer

__all__ = ["ALIGN", "AICores", "ASCEND_910", "Device", "DeviceMemory", "ENGINES", "EngineModel", "Event",
           "GE_LOCAL", "Gate", "NpuModel", "SimResult", "SimTask", "Stream", "Tracer", "compare",
           "engine_for_op", "simulate", "team"]
