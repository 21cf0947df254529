// The Messages window's rows (src/core/message_list.cpp): by severity, thread, range and text.
#include "gnomon/viewer/message_list.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../support/build_model.h"
#include "model/trace_builder.h"

using namespace gnomon::viewer;

TEST_CASE("messages are kept by least severity, by thread, inside a range and by their text") {
  gnomon::test::StreamWriter w;
  w.AppInfo("messages").ThreadInfo(1, 101, "main").ThreadInfo(2, 102, "worker");
  // Twelve messages 1 us apart: thread 1 and 2 in turn, severities 0 to 5 twice.
  for (uint32_t i = 0; i < 12; ++i) {
    w.ThreadContext(1 + i % 2).Message(1000 + i * 1000, uint8_t(i % 6), "message " + std::to_string(i));
  }
  const gnomon::server::TraceModel model = gnomon::test::BuildWholeModel(w);
  REQUIRE(model.messages.size() == 12);
  CHECK(SelectMessages(model, {}).size() == 12);
  CHECK(SelectMessages(model, {.min_severity = 4}) == std::vector<uint32_t>{4, 5, 10, 11});
  CHECK(SelectMessages(model, {.thread = 2}) == std::vector<uint32_t>{1, 3, 5, 7, 9, 11});
  CHECK(SelectMessages(model, {.min_severity = 4, .thread = 2}) == std::vector<uint32_t>{5, 11});
  // From 2 to 4 us after the first (trace-relative, the first message is at 0).
  CHECK(SelectMessages(model, {.range_ns = std::pair<int64_t, int64_t>{2000, 4000}}) ==
        std::vector<uint32_t>{2, 3, 4});
  const auto ends_in_1 = [](const std::string& text) { return text.back() == '1'; };
  CHECK(SelectMessages(model, {}, ends_in_1) == std::vector<uint32_t>{1, 11});
  CHECK(MessageThreads(model) == std::vector<uint32_t>{1, 2});
}
