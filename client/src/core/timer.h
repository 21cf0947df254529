// The program's timer and its calibration against the system clocks.
//
// Events carry raw timer ticks (the invariant TSC where the CPU has one, else
// CLOCK_MONOTONIC_RAW nanoseconds). The tick-to-nanosecond relation is never assumed:
// the sender reads calibration pairs throughout the run and the server fits them.
#pragma once

#include <cstdint>
#include <ctime>

#include "gnomon/protocol/messages.h"

namespace gnomon::client {

struct CalibrationPair {
  uint64_t tick = 0;
  int64_t monotonic_raw_ns = 0;
  int64_t monotonic_ns = 0;
  uint32_t uncertainty_ns = 0;  // width of the CLOCK_MONOTONIC_RAW bracket
};

// Chooses the timer once, before any event: the TSC when it is invariant and the
// environment does not say GNOMON_TIMER=monotonic.
void InitTimer();
protocol::TimerKind CurrentTimerKind();

int64_t ReadClockNs(clockid_t clock);

// The tightest of several bracketed reads of (tick, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC).
CalibrationPair ReadCalibrationPair();

}  // namespace gnomon::client
