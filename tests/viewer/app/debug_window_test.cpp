// The Debug window (src/app/debug_window.cpp), drawn in the real viewer under Xvfb. It
// reports nothing of itself in the layout dump: its lines are counted in the pixels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "known_trace.h"
#include "viewer_run.h"

using namespace gnomon::test;  // the window tests' helpers: viewer_run.h, known_trace.h, support/

namespace {

// Whether a pixel (0xAABBGGRR) is the light grey to white of text: the window's
// background, borders and title bar are all darker in at least one channel.
bool IsText(uint32_t pixel) {
  const uint32_t r = pixel & 0xFF, g = (pixel >> 8) & 0xFF, b = (pixel >> 16) & 0xFF;
  return std::min({r, g, b}) >= 96;
}

// The lines of text drawn in [x0, x1) x [y0, y1): runs of pixel rows holding text,
// apart by rows without any.
int TextLines(const ViewerRun& run, int x0, int y0, int x1, int y1) {
  int lines = 0;
  bool in_line = false;
  for (int y = std::max(0, y0); y < std::min(y1, run.shot.height); ++y) {
    bool text = false;
    for (int x = std::max(0, x0); x < std::min(x1, run.shot.width) && !text; ++x)
      text = IsText(run.shot.At(x, y));
    lines += text && !in_line;
    in_line = text;
  }
  return lines;
}

}  // namespace

TEST_CASE("debug: the window draws its nine lines of the session's state, in its tile below the timeline") {
  ScratchDir dir;
  const std::string trace = WriteKnownTrace(dir, "known");
  ViewerRun run = RunViewer(dir, {trace, "--frames", "3", "--show", "debug"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.log);
  REQUIRE(run.shot.pixels != nullptr);
  const JsonValue* debug = nullptr;
  for (const JsonValue& window : Array(run.layout, "side_windows")) {
    if (window.Find("title")->string == "Debug") debug = &window;
  }
  REQUIRE(debug != nullptr);
  const JsonValue* timeline = run.layout.Find("timeline");
  REQUIRE(timeline != nullptr);
  CHECK(Number(*debug, "y0") >= Number(*timeline, "y1"));
  // Below its title bar (a line of text and its frame padding: 21 pixels at scale 1),
  // inside its borders: Session, State, Received, Zones, Dropped, Decode, GPU, CPU clock
  // and Frame; no error line, as the file loaded.
  constexpr int kTitleBar = 22;
  const int lines = TextLines(run, int(Number(*debug, "x0")) + 2, int(Number(*debug, "y0")) + kTitleBar,
                              int(Number(*debug, "x1")) - 2, int(Number(*debug, "y1")) - 2);
  CHECK(lines == 9);
}
