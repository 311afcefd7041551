"""The kernel library: importing this package registers every kernel family."""
from . import registry
# each family module registers its kernels on import
from . import activation, binary, cast, conv, elementwise, matmul, movement, norm, pool, reduce, resize, tensor  # noqa: F401

from .registry import (AICORE, AICPU, DVPP, HCCL, KernelContext, Launch, OpKernel, TensorSpec,
                       is_registered, lookup, register, registered_ops, run_kernel)

__all__ = ["AICORE", "AICPU", "DVPP", "HCCL", "KernelContext", "Launch", "OpKernel", "TensorSpec",
           "is_registered", "lookup", "register", "registered_ops", "run_kernel", "registry"]
