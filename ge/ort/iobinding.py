"""IOBinding: a run's inputs and outputs bound ahead, onnxruntime's way, on the host.

Inputs bind as arrays (`bind_cpu_input`), OrtValues, or a raw buffer pointer on "cpu" (a numpy view of the
caller's memory: the caller keeps it alive, as onnxruntime's contract says). Outputs bind by name (ge
allocates them) or into the caller's memory (an OrtValue or a pointer with its type and shape): ge's runtimes
compute straight into such buffers (zero copy, `ge.Session.run(outputs=...)`). After `run_with_iobinding`,
`get_outputs()` gives the outputs in the order they were bound, as OrtValues. Host memory needs no
synchronisation: `synchronize_*` return at once.
"""
from __future__ import annotations

import ctypes
import numbers

import numpy as np

from ..errors import InputError
from .ortvalue import OrtValue, OrtValueVector, _cpu, element_dtype


def _from_pointer(what: str, name: str, element_type, shape, buffer_ptr) -> np.ndarray:
    """A numpy view of `shape` elements of `element_type` at host address `buffer_ptr`."""
    if element_type is None or shape is None:
        raise InputError(f"{what} '{name}': `element_type` and `shape` are to be provided if pre-allocated "
                         "memory is provided")
    if isinstance(buffer_ptr, bool) or not isinstance(buffer_ptr, numbers.Integral) or buffer_ptr <= 0:
        raise InputError(f"{what} '{name}': buffer_ptr must be a host address (an int > 0), got {buffer_ptr!r:.40}")
    dt = element_dtype(element_type)
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise InputError(f"{what} '{name}': shape {dims} has a negative size")
    count = int(np.prod(dims, dtype=np.int64))
    raw = (ctypes.c_uint8 * (count * dt.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(raw, dtype=dt, count=count).reshape(dims)


class IOBinding:
    """onnxruntime.IOBinding for one InferenceSession."""

    def __init__(self, session):
        self._session = session
        self._inputs: dict[str, object] = {}
        self._outputs: dict[str, np.ndarray | None] = {}   # name -> the caller's buffer, or None
        self._results: list[np.ndarray] = []

    # -- inputs --------------------------------------------------------------------------------------
    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name: str, device_type, device_id, element_type, shape, buffer_ptr) -> None:
        _cpu(device_type, f"bind_input '{name}'")
        self._inputs[name] = _from_pointer("bind_input", name, element_type, shape, buffer_ptr)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        if not isinstance(ortvalue, OrtValue):
            raise InputError(f"bind_ortvalue_input '{name}': an OrtValue, not {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def synchronize_inputs(self) -> None:
        """Host memory: nothing in flight to wait for."""

    # -- outputs -------------------------------------------------------------------------------------
    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0, element_type=None,
                    shape=None, buffer_ptr=None) -> None:
        _cpu(device_type, f"bind_output '{name}'")
        self._outputs[name] = None if buffer_ptr is None else _from_pointer("bind_output", name, element_type,
                                                                            shape, buffer_ptr)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        if not isinstance(ortvalue, OrtValue):
            raise InputError(f"bind_ortvalue_output '{name}': an OrtValue, not {type(ortvalue).__name__}")
        self._outputs[name] = ortvalue.numpy()

    def bind_output_array(self, name: str, arr: np.ndarray) -> None:
        """ge: output `name` is computed into `arr` (the numpy spelling of a bound buffer)."""
        self._outputs[name] = arr

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_outputs(self) -> None:
        """Host memory: the run wrote the outputs before it returned."""

    def get_outputs(self) -> list[OrtValue]:
        """The last run's outputs as OrtValues, in the order they were bound."""
        return [OrtValue(r) for r in self._results]

    def get_outputs_as_ortvaluevector(self) -> OrtValueVector:
        return OrtValueVector(self.get_outputs())

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [np.array(r) for r in self._results]

    # -- the run (InferenceSession.run_with_iobinding) -------------------------------------------------
    def _run(self, run_options) -> None:
        session = self._session
        names = list(self._outputs) or [o.name for o in session.get_outputs()]
        bound = {n: b for n, b in self._outputs.items() if b is not None}
        self._results = session._run(names, self._inputs, run_options, bound or None)
