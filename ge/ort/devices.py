"""onnxruntime's descriptions of devices and memory (OrtDevice, OrtMemoryInfo, OrtArenaCfg) for the CPU.

ge holds every value in host memory, so these describe that memory as onnxruntime's CPU package does;
a device of another type can be described (scripts build them to pass around), not allocated on
(OrtValue refuses it). Allocators registered with `create_and_register_allocator` have nothing to replace:
a ge session's device memory is its own (ge/npu/memory.py).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import InputError
from .options import OrtAllocatorType, OrtMemType


class OrtDeviceVendorId(enum.IntEnum):
    NONE = 0
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


# device type name -> (onnxruntime's OrtDevice type code, vendor)
_DEVICES = {"cpu": (0, OrtDeviceVendorId.NONE), "cuda": (1, OrtDeviceVendorId.NVIDIA),
            "gpu": (1, OrtDeviceVendorId.NONE), "dml": (1, OrtDeviceVendorId.MICROSOFT),
            "cann": (3, OrtDeviceVendorId.HUAWEI), "npu": (3, OrtDeviceVendorId.NONE)}


class OrtDevice:
    def __init__(self, device_type: int, device_id: int, vendor_id: int, mem_type: int = 0):
        self._type, self._id, self._vendor, self._mem = device_type, device_id, vendor_id, mem_type

    @staticmethod
    def make(ort_device_name: str, device_id: int, vendor_id: int = -1) -> "OrtDevice":
        name = str(ort_device_name).lower()
        if name not in _DEVICES:
            raise InputError(f"unknown device type '{ort_device_name}'; known: {', '.join(_DEVICES)}")
        code, vendor = _DEVICES[name]
        return OrtDevice(code, int(device_id), vendor if vendor_id == -1 else OrtDeviceVendorId(vendor_id))

    def device_id(self) -> int:
        return self._id

    def device_type(self) -> int:
        return self._type

    def device_vendor_id(self) -> int:
        return self._vendor

    def device_mem_type(self) -> int:
        return self._mem


@dataclass(frozen=True)
class OrtMemoryInfo:
    """Where values live: host memory, as onnxruntime's CPU allocator describes it."""
    name: str = "Cpu"
    allocator_type: int = OrtAllocatorType.ORT_ARENA_ALLOCATOR
    device_id: int = 0
    mem_type: int = OrtMemType.DEFAULT
    device_mem_type: int = OrtDeviceMemoryType.DEFAULT
    device_vendor_id: int = 0

    @classmethod
    def create_v2(cls, name: str, device_type, vendor_id: int, device_id: int, device_mem_type,
                  alignment: int, allocator_type) -> "OrtMemoryInfo":
        return cls(name, allocator_type, device_id, OrtMemType.DEFAULT, device_mem_type, vendor_id)


class OrtArenaCfg:
    """An arena configuration, kept as given: ge's caching allocator is configured by ge.Options."""

    FIELDS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
              "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")

    def __init__(self, *args, **kwargs):
        self.args, self.config = args, dict(args[0]) if args and isinstance(args[0], dict) else kwargs
        values = dict(zip(self.FIELDS, args)) if args and not isinstance(args[0], dict) else dict(self.config)
        unknown = sorted(set(values) - set(self.FIELDS))
        if unknown:
            raise InputError(f"OrtArenaCfg: unknown option(s) {', '.join(unknown)}; known: {', '.join(self.FIELDS)}")
        # onnxruntime's defaults: -1 (its choice) for each field not given
        for name in self.FIELDS:
            setattr(self, name, int(values.get(name, -1)))


def create_and_register_allocator(mem_info: OrtMemoryInfo, arena_cfg: OrtArenaCfg | None = None) -> None:
    """Accepted: a ge session allocates from its own device memory, so a shared allocator changes nothing."""
    if not isinstance(mem_info, OrtMemoryInfo):
        raise InputError(f"create_and_register_allocator: an OrtMemoryInfo, not {type(mem_info).__name__}")


def create_and_register_allocator_v2(provider_type: str, mem_info: OrtMemoryInfo, options: dict,
                                     arena_cfg: OrtArenaCfg | None = None) -> None:
    create_and_register_allocator(mem_info, arena_cfg)
