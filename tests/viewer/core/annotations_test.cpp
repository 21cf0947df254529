// Annotations kept beside a trace (src/core/annotations.cpp): written, read back, and
// refused when the file is not one.
#include "gnomon/viewer/annotations.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "../../support/process.h"

using namespace gnomon::viewer;

TEST_CASE("annotations are written and read back as they were, text of any kind included") {
  const std::vector<Annotation> notes{{0, 1'000'000, 0xFF40C0F0, "warm-up"},
                                      {5'000'000'000, 7'500'000'000, 0xFF6464E6, "\"GC\" pause\n\t\\ é ✓"},
                                      {-10, -10, 0, ""}};
  std::vector<Annotation> read;
  std::string error;
  REQUIRE_MESSAGE(ParseAnnotations(AnnotationsJson(notes), read, error), error);
  CHECK(read == notes);
  CHECK(AnnotationsPathFor("/data/run.gnomon") == "/data/run.gnomon.annotations.json");

  gnomon::test::ScratchDir dir;
  const std::string path = dir.File("t.gnomon.annotations.json");
  REQUIRE(LoadAnnotations(path, read, error));  // no file yet: none
  CHECK(read.empty());
  CHECK(SaveAnnotations(path, notes).empty());
  REQUIRE_MESSAGE(LoadAnnotations(path, read, error), error);
  CHECK(read == notes);
  CHECK(SaveAnnotations(dir.File("no/such/dir/x.json"), notes).find("cannot write") == 0);
}

TEST_CASE("an annotations file is untrusted: what is not one is refused, saying where, and nothing changes") {
  std::vector<Annotation> kept{{1, 2, 3, "kept"}};
  // Keys in any order, spaces anywhere, unknown keys skipped, \u escapes.
  std::string error;
  REQUIRE(ParseAnnotations(R"( [ {"text":"a\u00e9\ud800","x":1.5e3,"y":null,"end_ns":20,"begin_ns":10} ] )",
                           kept, error));
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].text == "a\xC3\xA9\xEF\xBF\xBD");
  CHECK(kept[0].end_ns == 20);
  const std::vector<Annotation> before = kept;
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "'[' was expected at byte 0"},
           {"{}", "'[' was expected"},
           {"[{\"begin_ns\":1}]", "without begin_ns and end_ns"},
           {"[{\"begin_ns\":5,\"end_ns\":1}]", "ends before it begins"},
           {"[{\"begin_ns\":1.5,\"end_ns\":2}]", "a whole number was expected"},
           {"[{\"begin_ns\":99999999999999999999,\"end_ns\":2}]", "a whole number was expected"},
           {"[{\"begin_ns\":1,\"end_ns\":2,\"color\":-1}]", "a colour is a number"},
           {"[{\"begin_ns\":1,\"end_ns\":2,\"text\":\"cut", "a string that does not end"},
           {"[{\"begin_ns\":1,\"end_ns\":2,\"x\":[1]}]", "a number, a string, true, false or null"},
           {"[{\"begin_ns\":1,\"end_ns\":2,\"text\":\"\\q\"}]", "an unknown escape"},
           {"[{\"begin_ns\":1,\"end_ns\":2}] extra", "something after the list"},
           {"[{\"begin_ns\":1,\"end_ns\":2,\"text\":\"" + std::string(5000, 'x') + "\"}]",
            "longer than 4096"}}) {
    CAPTURE(bad.substr(0, 60));
    error.clear();
    CHECK_FALSE(ParseAnnotations(bad, kept, error));
    CHECK_MESSAGE(error.find(says) != std::string::npos, error);
    CHECK(kept == before);
  }
}
