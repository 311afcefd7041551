"""The engines of the modelled NPU and which ops run where (GE's engine table, engine_conf.json).

- AICORE: dense compute (convolutions, matmuls, elementwise, pooling, normalization): the default.
- AICPU: shape, control and scalar ops (Shape, Size, Range, NonZero, TopK...), declared by the kernel.
- DVPP: image pre-processing (decode, crop, resize of images), by op type.
- HCCL: collectives (AllReduce, AllGather, ...), by op type. An *independent* engine: its own stream.
- GE_LOCAL: ops that produce no task (an alias such as Reshape/Flatten/Identity): they ride on a
  neighbour's stream (GE's skip_assign_stream + attach).

Attributes follow GE: `independent` engines never share a stream; `attach` engines may ride on the stream of
a predecessor of another engine; a lower `cost` wins when several predecessors could be reused.
"""
from __future__ import annotations

from dataclasses import dataclass

AICORE, AICPU, DVPP, HCCL, GE_LOCAL = "AICORE", "AICPU", "DVPP", "HCCL", "GE_LOCAL"
ENGINES = (AICORE, AICPU, DVPP, HCCL, GE_LOCAL)


@dataclass(frozen=True, slots=True)
class EngineInfo:
    name: str
    independent: bool = False  # needs its own stream, never shared (GE: DNN_HCCL)
    attach: bool = False       # may ride on a predecessor's stream of another engine
    cost: int = 10             # compute cost: the lowest wins among reusable predecessors
    # False: its tasks take no user address (GE: HcclTaskInfo::Init calls DisableZeroCopy on its I/O unless
    # the task def flags zero copy; docs/ge-reference.md §8.2: HCOM and similar ops take no address refresh):
    # their graph I/O is copied at the boundary (ge.plan.no_zero_copy_steps)
    address_refresh: bool = True


ENGINE_INFO = {
    AICORE: EngineInfo(AICORE, cost=10),
    AICPU: EngineInfo(AICPU, attach=True, cost=30),
    DVPP: EngineInfo(DVPP, attach=True, cost=20),
    HCCL: EngineInfo(HCCL, independent=True, cost=40, address_refresh=False),
    GE_LOCAL: EngineInfo(GE_LOCAL, attach=True, cost=0),
}

# Collectives (ONNX contrib / GE Hcom names) and image pre-processing ops, by op type.
HCCL_OPS = frozenset({
    "AllReduce", "AllGather", "AllToAll", "ReduceScatter", "Broadcast", "Send", "Recv",
    "HcomAllReduce", "HcomAllGather", "HcomBroadcast", "HcomReduceScatter", "HcomSend", "HcomReceive",
    "HcomAllToAllV", "HcomReduce"})
DVPP_OPS = frozenset({
    "ImageDecoder", "DecodeJpeg", "DecodePng", "DecodeImage", "DecodeAndCropJpeg", "DecodeBmp",
    "DvppDecode", "DvppResize", "DvppCrop", "CropAndResizeImage", "ImageNormalize"})
# Control-flow ops: a graph holding any of them runs on one stream (GE forbids v1 control ops multi-stream).
LABEL_OPS = ("If", "Loop", "Scan")   # control flow the task sink may run as label tasks (ge.plan.static_control_reason)
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan", "Switch", "Merge", "Enter", "RefEnter", "Exit",
                              "NextIteration", "LoopCond", "StreamSwitch", "StreamActive"})


def engine_for_op(op_type: str, declared: str | None = None) -> str:
    """The engine of an op: by type for HCCL/DVPP, else what the kernel declares, else AICORE."""
    if op_type in HCCL_OPS:
        return HCCL
    if op_type in DVPP_OPS:
        return DVPP
    return declared or AICORE


def info(engine: str) -> EngineInfo:
    return ENGINE_INFO.get(engine) or EngineInfo(engine)
