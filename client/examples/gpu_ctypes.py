#!/usr/bin/env python3
"""GPU zones and calibrations from Python, through Gnomon's C ABI (ctypes).

A binding passes the CPU time of each calibration pair in the clock it was read on
(here CLOCK_MONOTONIC_RAW, as Vulkan's calibrated timestamps return it), so it gets the
same accuracy as C++. The "GPU" is simulated: its counter reads CLOCK_MONOTONIC_RAW
plus 7 s. Run it, then capture it with gnomon-capture.

    GNOMON_LIBRARY=build/client/libgnomon.so python3 client/examples/gpu_ctypes.py
"""
import ctypes
import os
import sys
import time

lib = ctypes.CDLL(os.environ.get("GNOMON_LIBRARY", "libgnomon.so"))


class SourceLocation(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_char_p), ("file", ctypes.c_char_p),
                ("line", ctypes.c_uint32), ("color", ctypes.c_uint32), ("id", ctypes.c_uint32)]


class GpuContextInfo(ctypes.Structure):
    _fields_ = [("api", ctypes.c_int), ("device_name", ctypes.c_char_p),
                ("period_numerator_ns", ctypes.c_uint64), ("period_denominator", ctypes.c_uint64),
                ("valid_bits", ctypes.c_uint8), ("flags", ctypes.c_uint16),
                ("gpu_ticks", ctypes.c_uint64), ("cpu_time", ctypes.c_uint64),
                ("cpu_domain", ctypes.c_int), ("uncertainty_ns", ctypes.c_uint32)]


class GpuCalibration(ctypes.Structure):
    _fields_ = [("gpu_ticks", ctypes.c_uint64), ("cpu_time", ctypes.c_uint64), ("cpu_delta_ns", ctypes.c_int64),
                ("uncertainty_ns", ctypes.c_uint32), ("context", ctypes.c_uint32), ("cpu_domain", ctypes.c_int)]


CPU_TIME_MONOTONIC_RAW = 1
GPU_CONTEXT_CALIBRATED = 1
lib.gnomon_gpu_context_create.restype = ctypes.c_uint32
lib.gnomon_gpu_context_create.argtypes = [ctypes.POINTER(GpuContextInfo)]
lib.gnomon_gpu_zone_begin.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(SourceLocation)]
lib.gnomon_gpu_zone_end.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
lib.gnomon_gpu_time.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64]
lib.gnomon_gpu_calibration.argtypes = [ctypes.POINTER(GpuCalibration)]
lib.gnomon_set_thread_name.argtypes = [ctypes.c_char_p]


def raw_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


def gpu_ticks(ns):
    return ns + 7_000_000_000


lib.gnomon_set_thread_name(b"python")
now = raw_ns()
context = lib.gnomon_gpu_context_create(ctypes.byref(GpuContextInfo(
    api=0, device_name=b"Python GPU", period_numerator_ns=1, period_denominator=1, valid_bits=64,
    flags=GPU_CONTEXT_CALIBRATED, gpu_ticks=gpu_ticks(now), cpu_time=now, cpu_domain=CPU_TIME_MONOTONIC_RAW,
    uncertainty_ns=50)))
dispatch = SourceLocation(b"Python dispatch", b"main", __file__.encode(), 60, 0xFF000000, 0)  # kept alive

previous = now
for i in range(10):
    lib.gnomon_gpu_zone_begin(context, 2 * i, ctypes.byref(dispatch))
    lib.gnomon_gpu_zone_end(context, 2 * i + 1)
    start = raw_ns() + 200_000  # the "GPU" runs it 0.2 ms later, for 0.5 ms
    lib.gnomon_gpu_time(context, 2 * i, gpu_ticks(start))
    lib.gnomon_gpu_time(context, 2 * i + 1, gpu_ticks(start + 500_000))
    time.sleep(0.002)
    t = raw_ns()
    lib.gnomon_gpu_calibration(ctypes.byref(GpuCalibration(gpu_ticks(t), t, t - previous, 50, context,
                                                           CPU_TIME_MONOTONIC_RAW)))
    previous = t
print("gpu_ctypes: 10 dispatches recorded", file=sys.stderr)
