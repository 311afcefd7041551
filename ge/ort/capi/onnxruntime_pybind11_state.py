"""onnxruntime's native module's names: its exception classes (ge's, from ge/errors.py, which ge's errors
derive from) and the classes scripts take from it."""
from ...errors import (DeviceReset, EngineError, EPFail, Fail, InvalidArgument, InvalidGraph,  # noqa: F401
                       InvalidProtobuf, ModelLoadCanceled, ModelLoaded, ModelRequiresCompilation, NoModel,
                       NoSuchFile, NotFound, RuntimeException)
from ...errors import OrtNotImplemented as NotImplemented  # noqa: A001,F401 - onnxruntime's name
from ..logging import (set_default_logger_callback, set_default_logger_severity,  # noqa: F401
                       set_default_logger_verbosity)
from ..options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, OrtAllocatorType,  # noqa: F401
                       OrtMemType, RunOptions, SessionOptions)
from ..ortvalue import OrtValue, OrtValueVector  # noqa: F401
from ..session import ModelMetadata  # noqa: F401
from ...api import NodeArg  # noqa: F401
from ..info import (get_all_providers, get_available_providers, get_build_info, get_device,  # noqa: F401,E402
                get_version_string, set_global_thread_pool_sizes, set_seed)


def get_default_session_options() -> SessionOptions:
    return SessionOptions()
