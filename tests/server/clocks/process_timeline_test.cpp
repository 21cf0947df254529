// Programs of a merged trace on one timeline, from exchanges made from a known truth:
// two captures whose clocks are 1,000 s apart and drift, each with a program on its
// own clock, each capture reading a common reference.
#include "gnomon/server/process_timeline.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

using gnomon::server::HostClockExchange;
using gnomon::server::ProcessTimeline;
using gnomon::server::TraceModel;

namespace {

// `to(from)`: the other clock at a time of this one.
using Clock = std::function<double(double)>;

// Exchanges every 250 ms for 30 s of the "program" clock from `start_ns`: its two
// readings 1 – 5 µs apart, the other clock's read 2 – 40 µs before and after.
std::vector<HostClockExchange> Exchanges(const Clock& to, double start_ns, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> delay(2'000, 40'000), handling(1'000, 5'000);
  std::vector<HostClockExchange> out;
  for (double t2 = start_ns; t2 < start_ns + 30e9; t2 += 250e6) {
    const double t3 = t2 + handling(random);
    out.push_back({.probe_sent_ns = uint64_t(to(t2) - delay(random)),
                   .receive_ns = uint64_t(t2),
                   .send_ns = uint64_t(t3),
                   .reply_received_ns = uint64_t(to(t3) + delay(random))});
  }
  return out;
}

// A capture's readings of the reference, as the trace builder keeps them: its clock
// `before` and `after`, the reference read once between.
void AddReadings(gnomon::server::CaptureReference& capture, const Clock& reference, double start_ns,
                 uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> width(100, 600);
  for (double before = start_ns; before < start_ns + 30e9; before += 1e9) {
    const double after = before + width(random);
    const uint64_t r = uint64_t(reference((before + after) / 2));
    const uint64_t w = uint64_t(after) - uint64_t(before);
    capture.readings.push_back({.probe_sent_ns = r - w,
                                .receive_ns = uint64_t(before),
                                .send_ns = uint64_t(after),
                                .reply_received_ns = r + w});
  }
}

// The truth. Capture A's clock is the timeline's; capture B's runs 1,000 s ahead and
// 7 ppm fast; the reference is A's clock plus 1.7e18 ns (a wall clock). Program P runs
// 5,000 s ahead of A, program Q 200 s behind B.
constexpr double kReference = 1.7e18;
double BOfA(double a) { return a * (1 + 7e-6) + 1000e9; }
double AOfB(double b) { return (b - 1000e9) / (1 + 7e-6); }

struct Merged {
  TraceModel p, q;
};

// The two programs, capture A's clock reading `start_a` when the exchanges begin (its
// uptime: a day, or months).
Merged MakeMerged(const std::string& domain_a, const std::string& domain_b, double start_a = 100e9) {
  Merged m;
  m.p.program.name = "p";
  m.p.program.pid = 1;
  m.q.program.name = "q";
  m.q.program.pid = 2;
  m.p.host_clock_exchanges = Exchanges([](double p) { return p - 5000e9; }, start_a + 5000e9, 1);
  m.q.host_clock_exchanges = Exchanges([](double q) { return q + 200e9; }, BOfA(start_a) - 200e9, 2);
  m.p.first_tick = uint64_t(start_a + 5000e9);
  m.q.first_tick = uint64_t(BOfA(start_a) - 200e9);
  m.p.capture.capture_id = 11;
  m.p.capture.domain = domain_a;
  m.p.capture.reference_error_ns = 2'000'000;
  AddReadings(
      m.p.capture, [](double a) { return a + kReference; }, start_a, 3);
  m.q.capture.capture_id = 22;
  m.q.capture.domain = domain_b;
  m.q.capture.reference_error_ns = 3'000'000;
  AddReadings(
      m.q.capture, [](double b) { return AOfB(b) + kReference; }, BOfA(start_a), 4);
  return m;
}

}  // namespace

TEST_CASE("merged trace: a program of another capture lands on the first capture's clock, within its bound") {
  double start_a = 100e9;
  SUBCASE("a capture up for 100 s") {}
  SUBCASE("a capture up for 50 days: the inverse mapping still converges to the ns") { start_a = 4.32e15; }
  CAPTURE(start_a);
  const Merged m = MakeMerged("boot-1", "boot-1", start_a);
  const auto timelines = ProcessTimeline::Of({&m.p, &m.q});
  REQUIRE(timelines.size() == 2);
  CHECK(timelines[0].aligned());
  CHECK(timelines[1].aligned());
  uint64_t widest = 0;
  for (double q = BOfA(start_a) - 200e9; q < BOfA(start_a + 30e9) - 200e9; q += 0.77e9) {
    const double truth = AOfB(q + 200e9) - q;  // timeline = q + truth
    const auto at = timelines[1].At(int64_t(q));
    REQUIRE(at.valid);
    CAPTURE(q);
    CHECK(std::fabs(double(at.offset_ns) - truth) <= double(at.uncertainty_ns) + 2);
    widest = std::max(widest, at.uncertainty_ns);
  }
  // One host's reference: its stated error cancels; what is left is the brackets.
  CHECK(widest < 300'000);  // brackets of 80 us at most, and 100 ppm over half a second, three times
  // Both programs on one timeline: P's time and Q's of the same moment map to one place.
  const int64_t p_time = int64_t(start_a + 5010e9), q_time = int64_t(BOfA(start_a + 10e9) - 200e9);
  const int64_t p_ns = timelines[0].Ns(p_time);
  const int64_t q_ns = timelines[1].Ns(q_time);
  CHECK(std::llabs(p_ns - q_ns) <=
        int64_t(timelines[0].At(p_time).uncertainty_ns + timelines[1].At(q_time).uncertainty_ns) + 2);
  // The first capture's program maps through its own exchanges only.
  const auto p_at = timelines[0].At(p_time);
  CHECK(std::llabs(p_at.offset_ns + 5'000'000'000'000) <= int64_t(p_at.uncertainty_ns));
  CHECK(p_at.uncertainty_ns < 150'000);
}

TEST_CASE("merged trace: captures on different hosts add both references' stated errors to the bound") {
  const Merged same = MakeMerged("boot-1", "boot-1");
  const Merged apart = MakeMerged("boot-1", "boot-2");
  const auto near = ProcessTimeline::Of({&same.p, &same.q});
  const auto far = ProcessTimeline::Of({&apart.p, &apart.q});
  const int64_t q = int64_t(BOfA(115e9) - 200e9);
  CHECK(far[1].At(q).offset_ns == near[1].At(q).offset_ns);
  CHECK(far[1].At(q).uncertainty_ns == near[1].At(q).uncertainty_ns + 5'000'000);
}

TEST_CASE(
    "merged trace: a program whose capture read no reference, or that has no exchanges, is not aligned") {
  Merged m = MakeMerged("boot-1", "boot-1");
  TraceModel lost;  // a third capture's program, without readings
  lost.program.pid = 3;
  lost.host_clock_exchanges = m.q.host_clock_exchanges;
  lost.capture.capture_id = 33;
  TraceModel own;  // in capture B, but no exchanges with it (its own file)
  own.program.pid = 4;
  own.capture = m.q.capture;
  const auto timelines = ProcessTimeline::Of({&m.p, &m.q, &lost, &own});
  CHECK(timelines[0].aligned());
  CHECK(timelines[1].aligned());
  CHECK_FALSE(timelines[2].aligned());
  CHECK_FALSE(timelines[3].aligned());

  // Readings that put the reference anywhere map without overflow.
  for (HostClockExchange& e : m.q.capture.readings) {
    e.probe_sent_ns = UINT64_MAX - 10;
    e.reply_received_ns = UINT64_MAX;
  }
  const auto wild = ProcessTimeline::Of({&m.p, &m.q});
  // (the sanitizer build checks the arithmetic)
  for (int64_t t : {INT64_MIN, int64_t(0), INT64_MAX}) (void)wild[1].Ns(t), (void)wild[1].At(t);
}

TEST_CASE("merged trace: a capture's readings serve all its programs, without readings nothing is placed") {
  Merged m = MakeMerged("boot-1", "boot-1");
  // A second program of capture B whose stream holds no readings of its own (it came
  // and went between two): placed through the readings of its capture's other stream.
  TraceModel late;
  late.program.pid = 5;
  late.capture.capture_id = m.q.capture.capture_id;
  late.host_clock_exchanges = Exchanges([](double q) { return q + 300e9; }, BOfA(100e9) - 300e9, 5);
  late.first_tick = uint64_t(BOfA(100e9) - 300e9);
  const auto timelines = ProcessTimeline::Of({&m.p, &m.q, &late});
  REQUIRE(timelines[2].aligned());
  CHECK(timelines[2].through_reference());
  const double program = BOfA(115e9) - 300e9;
  const auto at = timelines[2].At(int64_t(program));
  CHECK(std::fabs(double(at.offset_ns) - (AOfB(program + 300e9) - program)) <= double(at.uncertainty_ns) + 2);

  // A merged file of captures that recorded no readings (an older capture's): no program
  // is placed, even where they would all seem to share one clock, and the timeline
  // starts at the earliest event of them all.
  Merged bare = MakeMerged("boot-1", "boot-1");
  bare.p.capture = {};
  bare.q.capture = {};
  bare.p.capture.merged = bare.q.capture.merged = true;
  const auto unplaced = ProcessTimeline::Of({&bare.p, &bare.q});
  CHECK_FALSE(unplaced[0].aligned());
  CHECK_FALSE(unplaced[1].aligned());
  CHECK_FALSE(unplaced[0].through_reference());

  // Placed programs set the timeline's start; one on a foreign clock does not move it.
  TraceModel foreign;
  foreign.program.pid = 6;
  foreign.first_tick = 1;  // far before everything, on its own clock
  const auto with_foreign = ProcessTimeline::Of({&m.p, &m.q, &foreign});
  const auto without = ProcessTimeline::Of({&m.p, &m.q});
  CHECK_FALSE(with_foreign[2].aligned());
  CHECK(with_foreign[0].Tick(m.p.first_tick) == without[0].Tick(m.p.first_tick));
  CHECK(with_foreign[0].Tick(m.p.first_tick) >= 0);
}
