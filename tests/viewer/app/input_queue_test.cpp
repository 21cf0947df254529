// The key queue (src/app/input_queue.cpp) in the real viewer under Xvfb: taps given all
// at once (--keys) must each be seen, a frame at a time.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using gnomon::test::Number;
using gnomon::test::RunViewer;
using gnomon::test::ScratchDir;
using gnomon::test::ViewerRun;
using gnomon::test::WriteKnownTrace;

TEST_CASE("quick key taps are all seen: three taps between two frames pan three steps") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  auto begin_after = [&](const std::string& keys) {
    std::vector<std::string> args{trace, "--frames", "12", "--range", "100:200"};
    if (!keys.empty()) args.insert(args.end(), {"--keys", keys});
    ViewerRun run = RunViewer(dir, args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.log);
    return Number(*run.layout.Find("view"), "begin_ns");
  };
  const double still = begin_after("");
  const double one = begin_after("right");
  const double three = begin_after("right,right,right");
  CHECK(one > still);
  CHECK(three - still == doctest::Approx(3 * (one - still)).epsilon(0.01));
  CHECK(begin_after("right,left") == doctest::Approx(still));
}
