"""The modelled interconnect: a collective's time on a ring of N devices (the projection `ge bench` prints).

Ring algorithms (Patarasuk & Yuan 2009; NCCL's ring), S the bytes one device holds, alpha the per-step
latency, beta the link bandwidth each way:
  AllReduce      2 (N-1) steps of S/N bytes  (reduce-scatter, then all-gather)
  AllGather        (N-1) steps of S bytes    (S: one device's input)
  ReduceScatter    (N-1) steps of S/N bytes  (S: one device's input)
  Broadcast        (N-1) steps of latency, S bytes pipelined once over the ring
Assumed constants, not measured (no NPU here):
  LINK_BANDWIDTH 30 GB/s: one HCCS link of an Ascend 910 (Huawei's Ascend 910 / Atlas 800 material: HCCS
                 30 GB/s per link, 8 NPUs a server in two fully connected groups of 4);
  STEP_LATENCY   10 us: the HCCL engine's task latency already in sim.ASCEND_910 (order of magnitude of a
                 ring step's launch plus handshake; an assumption).
The projection is weak scaling: every device keeps the plan's per-device shapes, only N changes.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ring:
    link_bandwidth: float = 30e9   # bytes/s each way between ring neighbours
    step_latency: float = 10e-6    # seconds a ring step costs beyond its bytes

    def collective_s(self, op: str, in_bytes: float, devices: int) -> float:
        """Seconds of one collective whose input is `in_bytes` on each of `devices` devices."""
        n = max(1, devices)
        if n == 1:
            return 0.0
        a, b = self.step_latency, self.link_bandwidth
        if op == "HcomAllReduce":
            return 2 * (n - 1) * (a + in_bytes / n / b)
        if op == "HcomAllGather":
            return (n - 1) * (a + in_bytes / b)
        if op == "HcomReduceScatter":
            return (n - 1) * (a + in_bytes / n / b)
        return (n - 1) * a + in_bytes / b   # HcomBroadcast (and any other collective)

    def describe(self) -> str:
        return (f"ring of N devices, link {self.link_bandwidth / 1e9:.0f} GB/s each way (Ascend 910 HCCS), "
                f"{self.step_latency * 1e6:.0f} us per step (assumed)")


HCCS_RING = Ring()
