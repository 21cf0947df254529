#include "gnomon/protocol/messages.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include "gnomon/protocol/handshake.h"

using namespace gnomon::protocol;

TEST_CASE("every known message type has a fixed size and a name and others have neither") {
  for (int type = 0; type < 256; ++type) {
    const bool known = type >= 1 && type <= kLastMessageType;
    CHECK_MESSAGE((FixedSize(uint8_t(type)) != 0) == known, "type ", type);
    CHECK_MESSAGE((std::string(MessageTypeName(uint8_t(type))) != "unknown") == known, "type ", type);
  }
}

TEST_CASE("typed writers fill the length fields from the tail, and the walker measures what they wrote") {
  uint8_t buffer[64] = {};
  uint8_t* end = WriteMessage(buffer, SourceLocationDef{.id = 7, .line = 9, .color = kNoColor},
                              {.name = "Draw", .function = "Render", .file = "a.cpp"});
  REQUIRE(size_t(end - buffer) == sizeof(SourceLocationDef) + 4 + 6 + 5);
  CHECK(buffer[0] == uint8_t(MessageType::kSourceLocationDef));
  const auto m = LoadLe<SourceLocationDef>(buffer);
  // Copies: a check binds a reference, and a packed message's fields are not aligned.
  CHECK(unsigned(m.name_length) == 4);
  CHECK(unsigned(m.function_length) == 6);
  CHECK(unsigned(m.file_length) == 5);
  const SourceLocationDefTail tail = ReadTail(m, buffer + sizeof(m));
  CHECK(tail.name == "Draw");
  CHECK(tail.function == "Render");
  CHECK(tail.file == "a.cpp");
  const MessageSpan whole = MeasureMessage(buffer, size_t(end - buffer));
  CHECK(whole.status == MessageSpan::kWhole);
  CHECK(whole.size == size_t(end - buffer));
  const MessageSpan cut = MeasureMessage(buffer, size_t(end - buffer) - 1);
  CHECK(cut.status == MessageSpan::kCutShort);
  CHECK(cut.size == size_t(end - buffer));
  CHECK(MeasureMessage(buffer, 5).size == sizeof(SourceLocationDef));  // the fixed part is not there yet
  buffer[0] = 0xEE;
  CHECK(MeasureMessage(buffer, sizeof(buffer)).status == MessageSpan::kUnknownType);
}

TEST_CASE("severity names") {
  CHECK(std::string(SeverityName(uint8_t(Severity::kWarning))) == "warning");
  CHECK(std::string(SeverityName(uint8_t(Severity::kFatal))) == "fatal");
  CHECK(std::string(SeverityName(200)) == "unknown");
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
