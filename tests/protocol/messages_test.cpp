#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"

using namespace gnomon::protocol;

TEST_CASE("every known message type has a fixed size and a name and others have neither") {
  for (int type = 0; type < 256; ++type) {
    const bool known = type >= 1 && type <= kLastMessageType;
    CHECK_MESSAGE((FixedSize(uint8_t(type)) != 0) == known, "type ", type);
    CHECK_MESSAGE((std::string(MessageTypeName(uint8_t(type))) != "unknown") == known, "type ", type);
  }
}

TEST_CASE("field offsets match docs/protocol.md") {
  CHECK(offsetof(ZoneBegin, srcloc_id) == 1);
  CHECK(offsetof(ZoneBegin, tick) == 5);
  CHECK(offsetof(LogMessage, severity) == 9);
  CHECK(offsetof(LogMessage, length) == 10);
  CHECK(offsetof(PlotValue, value) == 13);
  CHECK(offsetof(CpuCalibration, uncertainty_ns) == 25);
  CHECK(offsetof(SourceLocationDef, file_length) == 17);
  CHECK(offsetof(AppInfo, name_length) == 30);
  CHECK(offsetof(ClientHello, capabilities) == 16);
}

TEST_CASE("variable sizes are read from the fixed part") {
  constexpr size_t kMaxFixed = 64;  // room for any fixed part
  uint8_t def[kMaxFixed] = {};
  def[0] = uint8_t(MessageType::kSourceLocationDef);
  StoreLe<uint16_t>(def + offsetof(SourceLocationDef, name_length), 5);
  StoreLe<uint16_t>(def + offsetof(SourceLocationDef, function_length), 7);
  StoreLe<uint16_t>(def + offsetof(SourceLocationDef, file_length), 11);
  CHECK(VariableSize(def[0], def) == 23);
  uint8_t zone_end[kMaxFixed] = {uint8_t(MessageType::kZoneEnd)};
  CHECK(VariableSize(zone_end[0], zone_end) == 0);
  CHECK(kMaxMessageBytes >= sizeof(SourceLocationDef) + 3 * kMaxStringBytes);
  CHECK(kMaxMessageBytes >= sizeof(CounterResult) + 8 * 0xFFFF);
}
