// What the window tests share: a trace whose every number is known, and readers of what
// a window reported of itself in the layout dump (viewer_run.h).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"
#include "viewer_run.h"

namespace gnomon::test {

inline constexpr uint64_t kMs = 1'000'000;    // the fixture's ticks are nanoseconds
inline constexpr uint64_t kOrigin = 1 * kMs;  // its first event: trace-relative 0

inline constexpr uint32_t kFindZoneBars = 0xFFE6965Au;  // IM_COL32(90, 150, 230): find zone, compare A
inline constexpr uint32_t kFrameBars = 0xFF6EAA5Au;     // IM_COL32(90, 170, 110)

// The known trace. On "main": 70 "Work" zones, 40 of 1 ms, 20 of 2 ms and 10 of 4 ms, a
// millisecond apart, starting at trace time 0; on "worker", from 299 ms, 10 "Work" zones
// of `worker_ms` each. Every Work holds one "Inner" of half its length. 20 frame marks
// on main: 10 frames of 10 ms, 6 of 20 ms, 3 of 40 ms. Three messages from the worker,
// and a GPU context with ten calibrations whose residuals differ.
inline std::string WriteKnownTrace(const ScratchDir& dir, const std::string& name, uint64_t worker_ms = 8) {
  StreamWriter w;
  w.AppInfo(name)
      .Calibration(kOrigin, int64_t(kOrigin), int64_t(kOrigin), 0)
      .SourceLocation(1, "Work", "work", "known.cpp", 10, 0x3070C0)
      .SourceLocation(2, "Inner", "inner", "known.cpp", 20, 0xC05030)
      .ThreadInfo(1, 101, "main")
      .ThreadInfo(2, 102, "worker")
      .ThreadContext(1);
  auto work = [&](uint64_t begin, uint64_t length) {
    w.ZoneBegin(1, begin)
        .ZoneBegin(2, begin + length / 4)
        .ZoneEnd(begin + length / 4 * 3)
        .ZoneEnd(begin + length);
  };
  uint64_t t = kOrigin;
  for (int i = 0; i < 70; ++i) {
    const uint64_t length = (i < 40 ? 1 : i < 60 ? 2 : 4) * kMs;
    work(t, length);
    t += length + kMs;
  }
  uint64_t frame = kOrigin;
  w.Frame(protocol::MessageType::kFrameMark, 0, frame);
  for (int i = 0; i < 19; ++i) {
    frame += (i < 10 ? 10 : i < 16 ? 20 : 40) * kMs;
    w.Frame(protocol::MessageType::kFrameMark, 0, frame);
  }
  w.ThreadContext(2);
  for (int i = 0; i < 10; ++i)
    work(kOrigin + 299 * kMs + uint64_t(i) * (worker_ms + 2) * kMs, worker_ms * kMs);
  for (int i = 0; i < 3; ++i)
    w.Message(kOrigin + uint64_t(300 + i) * kMs, 2, "worker says " + std::to_string(i));
  w.GpuContext(1, "known GPU", 1, 1, 64, kOrigin, kOrigin, protocol::CpuTimeDomain::kMonotonicRaw, 5);
  for (int i = 1; i <= 10; ++i) {
    const uint64_t cpu = kOrigin + uint64_t(i) * 30 * kMs;
    w.GpuCalibration(1, cpu + uint64_t((i * 7) % 5) * 300, cpu, 100, 50);
  }
  w.ThreadContext(1).Calibration(kOrigin + 420 * kMs, int64_t(kOrigin + 420 * kMs),
                                 int64_t(kOrigin + 420 * kMs), 0);
  w.End(kOrigin + 420 * kMs);
  return WriteTraceFile(dir.File(name + ".gnomon"), w);
}

inline double Number(const JsonValue& v, const std::string& key) {
  const JsonValue* found = v.Find(key);
  REQUIRE_MESSAGE(found != nullptr, "no '", key, "'");
  return found->number;
}

inline const std::vector<JsonValue>& Array(const JsonValue& v, const std::string& key) {
  const JsonValue* found = v.Find(key);
  REQUIRE_MESSAGE(found != nullptr, "no '", key, "'");
  return found->array;
}

// The zone named `name` in a report's list of zones.
inline const JsonValue& Zone(const JsonValue& report, const std::string& name) {
  for (const JsonValue& z : Array(report, "zones")) {
    if (z.Find("name")->string == name) return z;
  }
  FAIL("no zone '" << name << "' in the report");
  return report;
}

// Histogram bars: the counts are those given (in any order), each bar's height is its
// count's share of the tallest, and its pixels are the bar colour (0xAABBGGRR).
inline void CheckBars(const ViewerRun& run, const std::vector<JsonValue>& bars, std::vector<double> counts,
                      uint32_t color) {
  std::vector<double> seen;
  double tallest_count = 0, tallest_height = 0;
  for (const JsonValue& b : bars) {
    seen.push_back(Number(b, "count"));
    if (Number(b, "count") > tallest_count) {
      tallest_count = Number(b, "count");
      tallest_height = Number(b, "y1") - Number(b, "y0");
    }
  }
  std::sort(seen.begin(), seen.end());
  std::sort(counts.begin(), counts.end());
  CHECK(seen == counts);
  CHECK(tallest_height >= 40);  // not a sliver
  for (const JsonValue& b : bars) {
    const double height = Number(b, "y1") - Number(b, "y0");
    CHECK(height == doctest::Approx(tallest_height * Number(b, "count") / tallest_count).epsilon(0.03));
    const int x = int((Number(b, "x0") + Number(b, "x1")) / 2);
    const int y = int(Number(b, "y1")) - 2;
    CHECK_MESSAGE(Close(run.shot.At(x, y), color), "bar at ", x, ",", y, ": ", run.shot.At(x, y));
    const int above = int(Number(b, "y0")) - 3;
    if (height < tallest_height - 5) CHECK_FALSE(Close(run.shot.At(x, above), color));
  }
}

}  // namespace gnomon::test
