// Cross-checks the fast decoder against the reference decoder on random streams.
#include "reference_decoder.h"

#include <doctest/doctest.h>

#include <random>

#include "gnomon/server/stream_decoder.h"
#include "../support/stream_writer.h"

namespace {

using gnomon::protocol::MessageType;
using gnomon::test::StreamWriter;

std::string N(uint64_t v) { return std::to_string(v); }

// Renders fast-decoder callbacks in the reference decoder's text form.
struct TextHandler {
  std::vector<std::string> lines;
  void OnThreadContext(uint32_t id) { lines.push_back("ThreadContext thread=" + N(id)); }
  void OnZoneBegin(uint32_t location, uint64_t tick) {
    lines.push_back("ZoneBegin location=" + N(location) + " tick=" + N(tick));
  }
  void OnZoneEnd(uint64_t tick) { lines.push_back("ZoneEnd tick=" + N(tick)); }
  void OnZoneName(std::string_view s) { lines.push_back("ZoneName '" + std::string(s) + "'"); }
  void OnZoneText(std::string_view s) { lines.push_back("ZoneText '" + std::string(s) + "'"); }
  void OnZoneColor(uint32_t rgb) { lines.push_back("ZoneColor rgb=" + N(rgb)); }
  void OnZoneValue(uint64_t v) { lines.push_back("ZoneValue value=" + N(v)); }
  void OnFrame(MessageType type, uint32_t name, uint64_t tick) {
    lines.push_back(std::string(type == MessageType::kFrameMark ? "FrameMark" : type == MessageType::kFrameBegin ? "FrameBegin" : "FrameEnd") +
                    " name=" + N(name) + " tick=" + N(tick));
  }
  void OnLogMessage(uint64_t tick, uint8_t severity, std::string_view s) {
    lines.push_back("LogMessage tick=" + N(tick) + " severity=" + N(severity) + " '" + std::string(s) + "'");
  }
  void OnPlotValue(uint32_t id, uint64_t tick, double value) {
    lines.push_back("PlotValue plot=" + N(id) + " tick=" + N(tick) + " value=" + std::to_string(value));
  }
  void OnCpuCalibration(const gnomon::protocol::CpuCalibration& c) {
    lines.push_back("CpuCalibration tick=" + N(c.tick) + " raw=" + std::to_string(c.monotonic_raw_ns) +
                    " mono=" + std::to_string(c.monotonic_ns) + " uncertainty=" + N(c.uncertainty_ns));
  }
  void OnStringDef(uint32_t id, uint8_t kind, std::string_view s) {
    lines.push_back("StringDef id=" + N(id) + " kind=" + N(kind) + " '" + std::string(s) + "'");
  }
  void OnSourceLocationDef(const gnomon::protocol::SourceLocationDef& d, std::string_view name,
                           std::string_view function, std::string_view file) {
    lines.push_back("SourceLocationDef id=" + N(d.id) + " line=" + N(d.line) + " color=" + N(d.color) + " '" +
                    std::string(name) + "' '" + std::string(function) + "' '" + std::string(file) + "'");
  }
  void OnThreadInfo(uint32_t id, uint32_t os, std::string_view name) {
    lines.push_back("ThreadInfo thread=" + N(id) + " os=" + N(os) + " '" + std::string(name) + "'");
  }
  void OnAppInfo(const gnomon::protocol::AppInfo& a, std::string_view name) {
    lines.push_back("AppInfo pid=" + N(a.pid) + " timer=" + N(a.timer_kind) + " rate=" + N(a.ticks_per_second_estimate) +
                    " unix=" + std::to_string(a.start_unix_ns) + " start=" + N(a.start_tick) + " '" + std::string(name) + "'");
  }
  void OnDroppedEvents(uint64_t total) { lines.push_back("DroppedEvents total=" + N(total)); }
  void OnEndOfStream(uint64_t tick) { lines.push_back("EndOfStream tick=" + N(tick)); }
  void OnGpuContextDef(const gnomon::protocol::GpuContextDef& d, std::string_view name) {
    lines.push_back("GpuContextDef id=" + N(d.context_id) + " api=" + N(d.api) + " bits=" + N(d.valid_bits) +
                    " flags=" + N(d.flags) + " period=" + N(d.period_numerator_ns) + "/" + N(d.period_denominator) +
                    " gpu=" + N(d.gpu_ticks) + " cpu=" + N(d.cpu_time) + " domain=" + N(d.cpu_domain) +
                    " uncertainty=" + N(d.uncertainty_ns) + " '" + std::string(name) + "'");
  }
  void OnGpuZoneBegin(uint32_t context, uint32_t query, uint32_t location, uint64_t tick) {
    lines.push_back("GpuZoneBegin context=" + N(context) + " query=" + N(query) + " location=" + N(location) +
                    " tick=" + N(tick));
  }
  void OnGpuZoneEnd(uint32_t context, uint32_t query, uint64_t tick) {
    lines.push_back("GpuZoneEnd context=" + N(context) + " query=" + N(query) + " value=" + N(tick));
  }
  void OnGpuTime(uint32_t context, uint32_t query, uint64_t ticks) {
    lines.push_back("GpuTime context=" + N(context) + " query=" + N(query) + " value=" + N(ticks));
  }
  void OnGpuCalibration(const gnomon::protocol::GpuCalibration& c) {
    lines.push_back("GpuCalibration context=" + N(c.context_id) + " gpu=" + N(c.gpu_ticks) + " cpu=" + N(c.cpu_time) +
                    " delta=" + std::to_string(c.cpu_delta_ns) + " uncertainty=" + N(c.uncertainty_ns) +
                    " domain=" + N(c.cpu_domain));
  }
  void OnGpuResync(const gnomon::protocol::GpuResync& r) {
    lines.push_back("GpuResync context=" + N(r.context_id) + " gpu=" + N(r.gpu_ticks) + " cpu=" + N(r.cpu_time) +
                    " uncertainty=" + N(r.uncertainty_ns) + " domain=" + N(r.cpu_domain));
  }
  void OnGpuContextName(uint32_t context, std::string_view name) {
    lines.push_back("GpuContextName context=" + N(context) + " '" + std::string(name) + "'");
  }
  void OnCounterSetDef(const gnomon::protocol::CounterSetDef& d, std::string_view name) {
    lines.push_back("CounterSetDef context=" + N(d.context_id) + " set=" + N(d.set_id) + " count=" +
                    N(d.counter_count) + " '" + std::string(name) + "'");
  }
  void OnCounterDef(const gnomon::protocol::CounterDef& d, std::string_view name, std::string_view description) {
    lines.push_back("CounterDef set=" + N(d.set_id) + " index=" + N(d.index) + " type=" + N(d.counter_type) +
                    " data=" + N(d.data_type) + " offset=" + N(d.offset) + " size=" + N(d.size) +
                    " max=" + N(d.raw_max) + " '" + std::string(name) + "' '" + std::string(description) + "'");
  }
  void OnCounterResult(const gnomon::protocol::CounterResult& r, const uint8_t* values) {
    std::string line = "CounterResult context=" + N(r.context_id) + " set=" + N(r.set_id) + " target=" +
                       N(r.target) + " flags=" + N(r.flags) + " id=" + N(r.target_id) + " values=";
    for (uint16_t i = 0; i < r.value_count; ++i) line += N(gnomon::protocol::LoadLe<uint64_t>(values + 8 * i)) + ",";
    lines.push_back(line);
  }
};

std::string RandomText(std::mt19937_64& rng) {
  std::string s(rng() % 40, ' ');
  for (char& c : s) c = char(32 + rng() % 95);
  return s;
}

StreamWriter RandomStream(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  StreamWriter w;
  for (int i = 0; i < count; ++i) {
    switch (rng() % 29) {
      case 0: w.ThreadContext(uint32_t(rng())); break;
      case 1: w.ZoneBegin(uint32_t(rng()), rng()); break;
      case 2: w.ZoneEnd(rng()); break;
      case 3: w.ZoneName(RandomText(rng)); break;
      case 4: w.ZoneText(RandomText(rng)); break;
      case 5: w.ZoneColor(uint32_t(rng())); break;
      case 6: w.ZoneValue(rng()); break;
      case 7: w.Frame(MessageType(8 + rng() % 3), uint32_t(rng()), rng()); break;
      case 8: w.Message(rng(), uint8_t(rng()), RandomText(rng)); break;
      case 9: w.Plot(uint32_t(rng()), rng(), double(int64_t(rng())) / 1e6); break;
      case 10: w.Calibration(rng(), int64_t(rng()), int64_t(rng()), uint32_t(rng())); break;
      case 11: w.String(uint32_t(rng()), gnomon::protocol::StringKind(1 + rng() % 2), RandomText(rng)); break;
      case 12: w.SourceLocation(uint32_t(rng()), RandomText(rng), RandomText(rng), RandomText(rng), uint32_t(rng()), uint32_t(rng())); break;
      case 13: w.ThreadInfo(uint32_t(rng()), uint32_t(rng()), RandomText(rng)); break;
      case 14: w.AppInfo(RandomText(rng), uint32_t(rng())); break;
      case 15: w.Dropped(rng()); break;
      case 16: w.End(rng()); break;
      case 17: w.GpuContext(uint32_t(rng()), RandomText(rng), rng(), rng(), uint8_t(rng()), rng(), rng(),
                            gnomon::protocol::CpuTimeDomain(rng() % 3), uint32_t(rng()),
                            gnomon::protocol::GpuApi(rng() % 4), uint16_t(rng())); break;
      case 18: w.GpuZoneBegin(uint32_t(rng()), uint32_t(rng()), uint32_t(rng()), rng()); break;
      case 19: w.GpuZoneEnd(uint32_t(rng()), uint32_t(rng()), rng()); break;
      case 20: w.GpuTime(uint32_t(rng()), uint32_t(rng()), rng()); break;
      case 21: w.GpuCalibration(uint32_t(rng()), rng(), rng(), int64_t(rng()), uint32_t(rng())); break;
      case 22: w.GpuResync(uint32_t(rng()), rng(), rng(), uint32_t(rng())); break;
      case 23: w.GpuContextName(uint32_t(rng()), RandomText(rng)); break;
      case 24: w.CounterSet(uint32_t(rng()), uint32_t(rng()), uint16_t(rng()), RandomText(rng)); break;
      case 25: w.Counter(uint32_t(rng()), uint16_t(rng()), gnomon::protocol::CounterType(rng() % 6),
                         gnomon::protocol::CounterDataType(rng() % 5), RandomText(rng), RandomText(rng),
                         uint32_t(rng()), uint32_t(rng()), rng()); break;
      case 26: {
        std::vector<uint64_t> values(rng() % 12);
        for (uint64_t& v : values) v = rng();
        w.CounterResult(uint32_t(rng()), uint32_t(rng()), gnomon::protocol::CounterTarget(rng() % 2),
                        uint32_t(rng()), values, uint8_t(rng()));
        break;
      }
      default: w.ZoneBegin(uint32_t(rng() % 100), rng()); break;
    }
  }
  return w;
}

}  // namespace

TEST_CASE("the fast decoder agrees with the reference decoder on random streams") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const StreamWriter stream = RandomStream(seed, 2000);
    const auto reference = gnomon::test::ReferenceDecode(stream.data(), stream.size());
    REQUIRE(reference.consumed == stream.size());
    TextHandler handler;
    const auto fast = gnomon::server::DecodeMessages(stream.data(), stream.size(), handler);
    CHECK(fast.consumed == stream.size());
    CHECK_FALSE(fast.failed);
    CHECK(fast.messages == reference.messages.size());
    REQUIRE(handler.lines.size() == reference.messages.size());
    for (size_t i = 0; i < handler.lines.size(); ++i) {
      REQUIRE_MESSAGE(handler.lines[i] == reference.messages[i], "message ", i, " of seed ", seed);
    }
  }
}

TEST_CASE("both decoders stop at the same byte for every cut of a stream") {
  const StreamWriter stream = RandomStream(99, 200);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto reference = gnomon::test::ReferenceDecode(stream.data(), cut);
    TextHandler handler;
    const auto fast = gnomon::server::DecodeMessages(stream.data(), cut, handler);
    REQUIRE_MESSAGE(fast.consumed == reference.consumed, "cut at ", cut);
    REQUIRE(handler.lines == reference.messages);
  }
}

TEST_CASE("both decoders reject an unknown type at the same byte") {
  StreamWriter stream = RandomStream(7, 50);
  const size_t good = stream.size();
  stream.Raw({0xEE, 1, 2, 3});
  const auto reference = gnomon::test::ReferenceDecode(stream.data(), stream.size());
  TextHandler handler;
  const auto fast = gnomon::server::DecodeMessages(stream.data(), stream.size(), handler);
  CHECK(reference.unknown_type);
  CHECK(fast.failed);
  CHECK(fast.consumed == good);
  CHECK(reference.consumed == good);
  CHECK(fast.error.find("unknown message type 238") != std::string::npos);
}
