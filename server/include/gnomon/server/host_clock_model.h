// Maps a program's clock (its trace timeline, CLOCK_MONOTONIC_RAW ns of its host or
// time namespace) onto the capture's, from the clock exchanges the capture made over
// the connection (HostClockExchange, kept raw in the trace).
//
// Each exchange brackets the offset (capture = program + offset): the probe left the
// capture at t1 and the reply arrived at t4, the program read the probe at t2 and sent
// the reply at t3, so t1 <= t2 + offset and t3 + offset <= t4:
//
//     offset in [t1 - t2, t4 - t3], whose half width is half the round trip
//     ((t4 - t1) - (t3 - t2)) / 2.
//
// Late readings (a busy capture, a reply queued behind megabytes of events) only widen
// the bracket; they never make it wrong. Of each second's exchanges the tightest is a
// knot. Between two knots the mapping interpolates, and its bound is the knots'
// brackets grown by what kMaxDriftPpm allows since the nearer one (so that a clock that
// did anything a real oscillator can between them is still inside); outside them it
// follows the drift where the knots tell it (10 s and three knots; at most kMaxDriftPpm)
// and stays flat where they do not, with a bound grown the same way plus the drift
// followed; between two epochs it is the hull of both. A knot that no drift can join to
// the one before starts a new epoch (the program's clock stepped), unless the knot after
// it joins the one before: then it alone is contradicted and left out. Exchanges whose
// own readings are impossible (a reply sent before it was received, a round trip shorter
// than the program's own time, readings going backwards) are rejected, as are those the
// program held for more than kMaxHandlingNs (useless, and they would put knots out of
// order). A program clock that goes back for good (a restored snapshot) has every later
// exchange rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

class HostClockModel {
 public:
  static constexpr int64_t kWindowNs = 1'000'000'000;
  // Crystal oscillators of two hosts differ by tens of ppm (CLOCK_MONOTONIC_RAW is
  // never slewed); a larger apparent rate is a step.
  static constexpr double kMaxDriftPpm = 100.0;
  static constexpr uint64_t kMaxHandlingNs = 100'000'000;

  struct Knot {
    int64_t program_ns = 0;  // the middle of the program's readings
    int64_t offset_ns = 0;   // the middle of the bracket
    uint64_t half_ns = 0;    // half the round trip
  };
  struct Epoch {
    std::vector<Knot> knots;  // by program time
    double drift_ppm = 0;     // least-squares slope of the offsets, 0 for one knot
    // Whether the knots span long enough for the slope to mean more than their
    // brackets' noise (10 s and three knots).
    bool drift_known() const { return knots.size() >= 3 && span_ns() >= 10'000'000'000; }
    // The offset at the first knot, and the widest bound of the mapping between its
    // first and last knots.
    int64_t offset_ns() const { return knots.front().offset_ns; }
    uint64_t uncertainty_ns() const;
    int64_t span_ns() const { return knots.back().program_ns - knots.front().program_ns; }
  };
  struct Mapping {
    bool valid = false;
    int64_t offset_ns = 0;  // capture = program + offset
    uint64_t uncertainty_ns = 0;
  };

  explicit HostClockModel(const std::vector<HostClockExchange>& exchanges);

  bool valid() const { return !epochs_.empty(); }
  const std::vector<Epoch>& epochs() const { return epochs_; }
  // The epoch that spans the longest: the one a report sums up. Null when none.
  const Epoch* main_epoch() const;
  // The offset at a program time: from the epoch holding it; before the first or after
  // the last, the nearest; between two, the hull of both.
  Mapping At(int64_t program_ns) const;

  size_t exchanges() const { return exchanges_; }
  size_t rejected() const { return rejected_; }          // impossible readings
  size_t contradicted() const { return contradicted_; }  // lone knots no drift explains

 private:
  std::vector<Epoch> epochs_;
  size_t exchanges_ = 0;
  size_t rejected_ = 0;
  size_t contradicted_ = 0;
};

}  // namespace gnomon::server
