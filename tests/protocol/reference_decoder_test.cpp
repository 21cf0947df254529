// Cross-checks the fast decoder against the reference decoder on random streams.
#include "reference_decoder.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>

#include "../support/stream_writer.h"
#include "ingest/stream_decoder.h"

namespace {

using gnomon::protocol::MessageType;
using gnomon::test::StreamWriter;

using gnomon::protocol::FieldKind;

// Renders every message the fast decoder hands over in the reference decoder's text
// form, its fields read from the decoded struct where the catalogue says they are.
struct TextHandler {
  std::vector<std::string> lines;
  template <typename M, typename Tail>
  void OnAnyMessage(const M& m, const Tail& tail) {
    const gnomon::protocol::MessageInfo& info = *gnomon::protocol::FindMessage(uint8_t(M::kType));
    std::string line = info.name;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&m);
    for (size_t i = 1; i < info.field_count; ++i) {
      const gnomon::protocol::FieldInfo& field = info.fields[i];
      uint64_t bits = 0;
      std::memcpy(&bits, bytes + field.offset, field.size);
      line += std::string(" ") + field.name + "=";
      if (field.kind == FieldKind::kI64) {
        line += std::to_string(int64_t(bits));
      } else if (field.kind == FieldKind::kF64) {
        double d;
        std::memcpy(&d, &bits, 8);
        char text[32];
        std::snprintf(text, sizeof(text), "%.17g", d);
        line += text;
      } else {
        line += std::to_string(bits);
      }
    }
    gnomon::protocol::ForEachTailPart(tail, [&](const char* name, const auto& part) {
      if constexpr (std::is_same_v<std::decay_t<decltype(part)>, std::string_view>) {
        line += std::string(" ") + name + "='" + std::string(part) + "'";
      } else {
        line += std::string(" ") + name + "=[";
        for (size_t v = 0; v < part.count; ++v) line += (v ? "," : "") + std::to_string(part[v]);
        line += "]";
      }
    });
    lines.push_back(line);
  }
};

// The same, through the decoder's path for a begin followed at once by its end.
struct LeafTextHandler : TextHandler {
  void OnLeafZone(uint32_t location, uint64_t begin, uint64_t end) {
    lines.push_back("ZoneBegin srcloc_id=" + std::to_string(location) + " tick=" + std::to_string(begin));
    lines.push_back("ZoneEnd tick=" + std::to_string(end));
  }
};

const gnomon::test::ProtocolDoc& Doc() {
  static const gnomon::test::ProtocolDoc doc = gnomon::test::ReadProtocolDoc(gnomon::test::ProtocolDocPath());
  return doc;
}

gnomon::test::ReferenceDecodeResult Reference(const StreamWriter& w, size_t size) {
  REQUIRE_MESSAGE(Doc().errors.empty(), Doc().errors.front());
  return gnomon::test::ReferenceDecode(Doc(), w.data(), size);
}

std::string RandomText(std::mt19937_64& rng) {
  std::string s(rng() % 40, ' ');
  for (char& c : s) c = char(32 + rng() % 95);
  return s;
}

StreamWriter RandomStream(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  StreamWriter w;
  for (int i = 0; i < count; ++i) {
    switch (rng() % 32) {
      case 0:
        w.ThreadContext(uint32_t(rng()));
        break;
      case 1:
        w.ZoneBegin(uint32_t(rng()), rng());
        break;
      case 2:
        w.ZoneEnd(rng());
        break;
      case 3:
        w.ZoneName(RandomText(rng));
        break;
      case 4:
        w.ZoneText(RandomText(rng));
        break;
      case 5:
        w.ZoneColor(uint32_t(rng()));
        break;
      case 6:
        w.ZoneValue(rng());
        break;
      case 7:
        w.Frame(MessageType(8 + rng() % 3), uint32_t(rng()), rng());
        break;
      case 8:
        w.Message(rng(), uint8_t(rng()), RandomText(rng));
        break;
      case 9:
        w.Plot(uint32_t(rng()), rng(), double(int64_t(rng())) / 1e6);
        break;
      case 10:
        w.Calibration(rng(), int64_t(rng()), int64_t(rng()), uint32_t(rng()));
        break;
      case 11:
        w.String(uint32_t(rng()), gnomon::protocol::StringKind(1 + rng() % 2), RandomText(rng));
        break;
      case 12:
        w.SourceLocation(uint32_t(rng()), RandomText(rng), RandomText(rng), RandomText(rng), uint32_t(rng()),
                         uint32_t(rng()));
        break;
      case 13:
        w.ThreadInfo(uint32_t(rng()), uint32_t(rng()), RandomText(rng));
        break;
      case 14:
        w.AppInfo(RandomText(rng), uint32_t(rng()));
        break;
      case 15:
        w.Dropped(rng());
        break;
      case 16:
        w.End(rng());
        break;
      case 17:
        w.GpuContext(uint32_t(rng()), RandomText(rng), rng(), rng(), uint8_t(rng()), rng(), rng(),
                     gnomon::protocol::CpuTimeDomain(rng() % 3), uint32_t(rng()),
                     gnomon::protocol::GpuApi(rng() % 4), uint16_t(rng()));
        break;
      case 18:
        w.GpuZoneBegin(uint32_t(rng()), uint32_t(rng()), uint32_t(rng()), rng());
        break;
      case 19:
        w.GpuZoneEnd(uint32_t(rng()), uint32_t(rng()), rng());
        break;
      case 20:
        w.GpuTime(uint32_t(rng()), uint32_t(rng()), rng());
        break;
      case 21:
        w.GpuCalibration(uint32_t(rng()), rng(), rng(), int64_t(rng()), uint32_t(rng()));
        break;
      case 22:
        w.GpuResync(uint32_t(rng()), rng(), rng(), uint32_t(rng()));
        break;
      case 23:
        w.GpuContextName(uint32_t(rng()), RandomText(rng));
        break;
      case 24:
        w.CounterSet(uint32_t(rng()), uint32_t(rng()), uint16_t(rng()), RandomText(rng));
        break;
      case 25:
        w.Counter(uint32_t(rng()), uint16_t(rng()), gnomon::protocol::CounterType(rng() % 6),
                  gnomon::protocol::CounterDataType(rng() % 5), RandomText(rng), RandomText(rng),
                  uint32_t(rng()), uint32_t(rng()), rng());
        break;
      case 26: {
        std::vector<uint64_t> values(rng() % 12);
        for (uint64_t& v : values) v = rng();
        w.CounterResult(uint32_t(rng()), uint32_t(rng()), gnomon::protocol::CounterTarget(rng() % 2),
                        uint32_t(rng()), values, uint8_t(rng()));
        break;
      }
      case 27:
        w.GpuTimeBracket(uint32_t(rng()), rng(), rng(), rng(), gnomon::protocol::CpuTimeDomain(rng() % 3));
        break;
      case 28:
        w.Alloc(uint32_t(rng()), rng(), rng(), rng()).Free(uint32_t(rng()), rng(), rng());
        break;
      case 29:
        w.LockWait(uint32_t(rng()), rng()).LockObtain(uint32_t(rng()), rng(), uint8_t(rng()));
        w.LockRelease(uint32_t(rng()), rng());
        break;
      default:
        w.ZoneBegin(uint32_t(rng() % 100), rng());
        break;
    }
  }
  return w;
}

}  // namespace

TEST_CASE("the fast decoder agrees with the reference decoder on random streams") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const StreamWriter stream = RandomStream(seed, 2000);
    const auto reference = Reference(stream, stream.size());
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
    LeafTextHandler leaves;
    CHECK(gnomon::server::DecodeMessages(stream.data(), stream.size(), leaves).consumed == stream.size());
    CHECK(leaves.lines == handler.lines);
  }
}

TEST_CASE("both decoders stop at the same byte for every cut of a stream") {
  const StreamWriter stream = RandomStream(99, 200);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto reference = Reference(stream, cut);
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
  const auto reference = Reference(stream, stream.size());
  TextHandler handler;
  const auto fast = gnomon::server::DecodeMessages(stream.data(), stream.size(), handler);
  CHECK(reference.unknown_type);
  CHECK(fast.failed);
  CHECK(fast.consumed == good);
  CHECK(reference.consumed == good);
  CHECK(fast.error.find("unknown message type 238") != std::string::npos);
}
