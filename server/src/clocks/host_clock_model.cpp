#include "gnomon/server/host_clock_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gnomon::server {
namespace {

constexpr uint64_t kMaxReading = uint64_t{std::numeric_limits<int64_t>::max()};

double LeastSquaresSlope(const std::vector<HostClockModel::Knot>& knots) {
  if (knots.size() < 2) return 0;
  const double x0 = double(knots.front().program_ns), y0 = double(knots.front().offset_ns);
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& k : knots) {
    const double x = double(k.program_ns) - x0, y = double(k.offset_ns) - y0;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double n = double(knots.size());
  const double d = n * sxx - sx * sx;
  return d > 0 ? (n * sxy - sx * sy) / d : 0;
}

uint64_t Saturate(double ns) { return ns >= 1.8e19 ? UINT64_MAX : uint64_t(std::max(0.0, ns)); }

double DriftAllowance(double gap_ns) { return std::fabs(gap_ns) * HostClockModel::kMaxDriftPpm * 1e-6; }

// How far a clock whose rate stays within kMaxDriftPpm can stray, `nearer_ns` from the
// nearer of two knots, from the straight line between them (whose slope is the chord's):
// it may leave the line at the allowed rate plus the chord's own, and must come back.
double BetweenKnots(const HostClockModel::Knot& a, const HostClockModel::Knot& b, double nearer_ns) {
  const double span = double(b.program_ns) - double(a.program_ns);
  const double chord = span > 0 ? std::fabs(double(b.offset_ns) - double(a.offset_ns)) / span : 0.0;
  return std::fabs(nearer_ns) * (HostClockModel::kMaxDriftPpm * 1e-6 + chord);
}

// Whether two knots can be one clock: their brackets overlap once the drift allowed
// over the time between them is added.
bool Joins(const HostClockModel::Knot& a, const HostClockModel::Knot& b) {
  const double allowed =
      double(a.half_ns) + double(b.half_ns) + DriftAllowance(double(b.program_ns) - double(a.program_ns));
  return std::fabs(double(b.offset_ns) - double(a.offset_ns)) <= allowed;
}

// A time in ns, saturated: crafted exchanges can put drift and offsets anywhere.
int64_t ClampedNs(double ns) {
  if (!(ns > -9.2e18)) return std::isnan(ns) ? 0 : INT64_MIN;
  if (ns > 9.2e18) return INT64_MAX;
  return int64_t(std::llround(ns));
}

// The mapping of one epoch at a program time: interpolated between its knots, else
// extrapolated from the nearer end: along the drift where the knots tell it (then the
// bound also covers the true rate differing from it by all the drift allowed), flat
// where they do not. A slope fitted to a second of wide brackets can be thousands of
// ppm of noise; followed for a few hundred ms it would put the offset outside its bound.
HostClockModel::Mapping MapInEpoch(const HostClockModel::Epoch& epoch, int64_t program_ns) {
  using Knot = HostClockModel::Knot;
  const auto& k = epoch.knots;
  const auto after = std::lower_bound(k.begin(), k.end(), program_ns,
                                      [](const Knot& knot, int64_t t) { return knot.program_ns < t; });
  if (after == k.begin() || after == k.end()) {
    const Knot& edge = after == k.begin() ? k.front() : k.back();
    const double gap = double(program_ns) - double(edge.program_ns);
    const double drift = epoch.drift_known() ? std::clamp(epoch.drift_ppm, -HostClockModel::kMaxDriftPpm,
                                                          HostClockModel::kMaxDriftPpm)
                                             : 0.0;
    return {.valid = true,
            .offset_ns = ClampedNs(double(edge.offset_ns) + gap * drift * 1e-6),
            .uncertainty_ns =
                Saturate(double(edge.half_ns) + DriftAllowance(gap) + std::fabs(gap * drift * 1e-6))};
  }
  const Knot& a = *(after - 1);
  const Knot& b = *after;
  const double span = double(b.program_ns) - double(a.program_ns);
  const double t = span > 0 ? (double(program_ns) - double(a.program_ns)) / span : 0.0;
  const double nearer =
      std::min(double(program_ns) - double(a.program_ns), double(b.program_ns) - double(program_ns));
  return {.valid = true,
          .offset_ns = ClampedNs(double(a.offset_ns) + t * (double(b.offset_ns) - double(a.offset_ns))),
          .uncertainty_ns = Saturate(double(a.half_ns) + t * (double(b.half_ns) - double(a.half_ns)) +
                                     BetweenKnots(a, b, nearer))};
}

}  // namespace

uint64_t HostClockModel::Epoch::uncertainty_ns() const {
  uint64_t worst = knots.front().half_ns;
  for (size_t i = 1; i < knots.size(); ++i) {
    // The widest point between two knots: where the drift allowance from the nearer one
    // meets the interpolated bracket (at most at the middle).
    const double gap = double(knots[i].program_ns) - double(knots[i - 1].program_ns);
    const double middle = (double(knots[i].half_ns) + double(knots[i - 1].half_ns)) / 2 +
                          BetweenKnots(knots[i - 1], knots[i], gap / 2);
    worst = std::max({worst, knots[i].half_ns, Saturate(middle)});
  }
  return worst;
}

HostClockModel::HostClockModel(const std::vector<HostClockExchange>& exchanges)
    : exchanges_(exchanges.size()) {
  // The tightest valid exchange of each window, in program time.
  std::vector<Knot> knots;
  int64_t window = -1;  // of knots.back(): program time / kWindowNs
  uint64_t last_t1 = 0, last_t2 = 0;
  for (const HostClockExchange& e : exchanges) {
    const bool readable = e.probe_sent_ns <= kMaxReading && e.receive_ns <= kMaxReading &&
                          e.send_ns <= kMaxReading && e.reply_received_ns <= kMaxReading;
    if (!readable || e.reply_received_ns < e.probe_sent_ns || e.send_ns < e.receive_ns ||
        e.send_ns - e.receive_ns > kMaxHandlingNs ||
        e.reply_received_ns - e.probe_sent_ns < e.send_ns - e.receive_ns || e.probe_sent_ns < last_t1 ||
        e.receive_ns < last_t2) {
      ++rejected_;
      continue;
    }
    last_t1 = e.probe_sent_ns;
    last_t2 = e.receive_ns;
    const int64_t low = int64_t(e.probe_sent_ns) - int64_t(e.receive_ns);
    const int64_t high = int64_t(e.reply_received_ns) - int64_t(e.send_ns);
    const Knot knot{.program_ns = int64_t(e.receive_ns + (e.send_ns - e.receive_ns) / 2),
                    .offset_ns = low + (high - low) / 2,
                    .half_ns = (uint64_t(high - low) + 1) / 2};
    if (knot.program_ns / kWindowNs == window) {
      if (knot.half_ns < knots.back().half_ns) knots.back() = knot;
    } else {
      knots.push_back(knot);
      window = knot.program_ns / kWindowNs;
    }
  }
  for (size_t i = 0; i < knots.size(); ++i) {
    if (!epochs_.empty()) {
      const Knot& last = epochs_.back().knots.back();
      if (Joins(last, knots[i])) {
        epochs_.back().knots.push_back(knots[i]);
        continue;
      }
      if (i + 1 < knots.size() && Joins(last, knots[i + 1])) {
        ++contradicted_;
        continue;
      }
    }
    epochs_.emplace_back().knots.push_back(knots[i]);
  }
  for (Epoch& epoch : epochs_) epoch.drift_ppm = LeastSquaresSlope(epoch.knots) * 1e6;
}

const HostClockModel::Epoch* HostClockModel::main_epoch() const {
  const Epoch* best = nullptr;
  for (const Epoch& e : epochs_) {
    if (best == nullptr || e.span_ns() > best->span_ns() ||
        (e.span_ns() == best->span_ns() && e.knots.size() > best->knots.size())) {
      best = &e;
    }
  }
  return best;
}

HostClockModel::Mapping HostClockModel::At(int64_t program_ns) const {
  if (epochs_.empty()) return {};
  // Epochs follow each other in program time: the first that ends at or after the time
  // (the last when none does), found by bisection: every exported event asks.
  const auto ends_before = [program_ns](const Epoch& e) { return e.knots.back().program_ns < program_ns; };
  const size_t i =
      size_t(std::partition_point(epochs_.begin(), epochs_.end() - 1, ends_before) - epochs_.begin());
  const Mapping here = MapInEpoch(epochs_[i], program_ns);
  if (i == 0 || program_ns >= epochs_[i].knots.front().program_ns) return here;
  // Between the end of one epoch and the start of the next: the clock stepped somewhere
  // in there, so either may hold.
  const Mapping before = MapInEpoch(epochs_[i - 1], program_ns);
  const double low = std::min(double(before.offset_ns) - double(before.uncertainty_ns),
                              double(here.offset_ns) - double(here.uncertainty_ns));
  const double high = std::max(double(before.offset_ns) + double(before.uncertainty_ns),
                               double(here.offset_ns) + double(here.uncertainty_ns));
  return {.valid = true,
          .offset_ns = ClampedNs((low + high) / 2),
          .uncertainty_ns = Saturate((high - low) / 2 + 1)};
}

}  // namespace gnomon::server
