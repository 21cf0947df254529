// The trace the viewer's analyses are tested on, without a window (zone search, flame
// graph, frame times, trace comparison).
#pragma once

#include <cstdint>

#include "../../support/build_model.h"
#include "../../support/stream_writer.h"

namespace gnomon::test {

// Thread 1: frames of 100 ns every 1,000 ns; in each, A (40 ns) then B (20 + i % 3 ns),
// B holding C (5 ns). Thread 2: ten As of 1,000 ns. Frame marks every 1,000 ns, and
// frame 7 takes 40 ms.
inline server::TraceModel AnalysisSample() {
  StreamWriter w;
  w.AppInfo("sample");
  w.SourceLocation(1, "Frame", "f", "x.cpp", 1).SourceLocation(2, "A", "f", "x.cpp", 2);
  w.SourceLocation(3, "B", "f", "x.cpp", 3).SourceLocation(4, "C", "f", "x.cpp", 4);
  w.ThreadInfo(1, 11, "main").ThreadInfo(2, 12, "worker").ThreadContext(1);
  uint64_t frame_at = 0;
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t t = 1000 * i;
    w.ZoneBegin(1, t).ZoneBegin(2, t + 10).ZoneEnd(t + 50).ZoneBegin(3, t + 60).ZoneBegin(4, t + 61);
    w.ZoneEnd(t + 66).ZoneEnd(t + 80 + i % 3).ZoneEnd(t + 100);
    w.Frame(protocol::MessageType::kFrameMark, 0, frame_at);
    frame_at += i == 7 ? 40'000'000 : 1000;
  }
  w.ThreadContext(2);
  for (uint64_t i = 0; i < 10; ++i) w.ZoneBegin(2, 20'000 + 2000 * i).ZoneEnd(21'000 + 2000 * i);
  return BuildModel(w);
}

}  // namespace gnomon::test
