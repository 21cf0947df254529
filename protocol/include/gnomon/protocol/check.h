// Invariants of the code itself (never of input: bytes from a program or a file are
// checked and refused with a message, never asserted on).
//
//   GNOMON_CHECK(written <= bound, "compaction wrote past its bound");
//
// GNOMON_CHECK is for invariants whose breaking would corrupt data silently (a buffer
// overrun, a clock mapping that is no longer monotonic): it is checked in every build,
// so it belongs off the hot paths; a broken one names itself and where, then aborts.
// On hot paths, assert() (with a message), which debug and sanitizer builds check.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace gnomon::protocol {

[[noreturn]] inline void CheckFailed(const char* condition, const char* message, const char* file, int line) {
  std::fprintf(stderr, "gnomon: internal error at %s:%d: %s (%s is false); please report it\n", file, line,
               message, condition);
  std::abort();
}

}  // namespace gnomon::protocol

#define GNOMON_CHECK(condition, message) \
  ((condition) ? static_cast<void>(0)    \
               : ::gnomon::protocol::CheckFailed(#condition, message, __FILE__, __LINE__))
