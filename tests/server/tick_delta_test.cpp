#include "gnomon/server/tick_delta.h"

#include <doctest/doctest.h>

#include <random>

#include "../support/stream_writer.h"

using gnomon::test::StreamWriter;

TEST_CASE("tick deltas round-trip every message, any tick, and leave a broken tail alone") {
  std::mt19937_64 rng(3);
  StreamWriter w;
  w.AppInfo("delta").ThreadContext(1);
  uint64_t tick = 1000;
  for (int i = 0; i < 2000; ++i) {
    tick += rng() % 100;
    switch (i % 9) {
      case 0: w.ZoneBegin(1, tick); break;
      case 1: w.ZoneEnd(tick); break;
      case 2: w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick); break;
      case 3: w.Message(tick, 2, "text"); break;
      case 4: w.Plot(3, tick, 1.5); break;
      case 5: w.GpuZoneBegin(1, 2, 3, tick); break;
      case 6: w.GpuZoneEnd(1, 2, tick); break;
      case 7: w.ZoneBegin(1, rng()); break;  // absurd and backward ticks too
      default: w.Calibration(tick, 5, 6, 7); break;
    }
  }
  w.End(~uint64_t{0});
  w.Raw({2, 1, 0, 0});  // an incomplete ZoneBegin at the end
  std::vector<uint8_t> bytes = w.bytes();
  gnomon::server::EncodeTickDeltas(bytes.data(), bytes.size());
  CHECK(bytes != w.bytes());
  CHECK(std::equal(bytes.end() - 4, bytes.end(), w.bytes().end() - 4));  // the broken tail is untouched
  gnomon::server::DecodeTickDeltas(bytes.data(), bytes.size());
  CHECK(bytes == w.bytes());
}
