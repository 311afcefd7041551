"""Options for tests of the stream machinery itself: with kernels untiled (one AI core) every stream gets its own
host thread up to the thread budget (ge.npu.programs.stream_threads); at the defaults the budget goes to the
AI cores and a static plan's streams are pulled by them (runtime_v1/dispatch.py)."""
PER_STREAM = {"aicore_num": 1}
