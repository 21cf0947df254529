// Runs the real viewer under Xvfb for a number of frames and reads back what it drew:
// the screenshot's pixels and the layout dump (lanes, items, the windows' reports and
// where each window was).
#pragma once

#include <stb_image.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../../support/json_check.h"
#include "../../support/process.h"
#include "../../support/stream_writer.h"

namespace gnomon::test {

struct Screenshot {
  int width = 0, height = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
  uint32_t At(int x, int y) const {  // as 0xAABBGGRR
    const unsigned char* p = pixels.get() + (size_t(y) * size_t(width) + size_t(x)) * 4;
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | 0xFF000000u;
  }
};

// Whether two colours (0xAABBGGRR) are within a few steps of each other in every channel.
bool Close(uint32_t a, uint32_t b);

struct ViewerRun {
  int exit_code;
  Screenshot shot;
  JsonValue layout;
  std::string log;
  double cpu_seconds = 0;
};

// Writes the stream `w` to a trace file at `path` (replacing it); returns the path.
std::string WriteTraceFile(const std::string& path, const StreamWriter& w);
// The same with a stream per program, as a capture of several programs writes them.
std::string WriteTraceFile(const std::string& path, const std::vector<const StreamWriter*>& programs);

// Runs gnomon-viewer with `args` plus a window size (1200x700 unless `args` says) and
// the screenshot and layout dump options; `env` adds to the environment (XDG_CONFIG_HOME
// is `dir` unless `env` says otherwise).
ViewerRun RunViewer(const ScratchDir& dir, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env = {});

// The items of `kind` (DrawItem::Kind as a number) the last frame drew: x0, x1, y0 and
// label of each, in the order drawn.
std::vector<std::tuple<double, double, double, std::string>> ItemsOfKind(const ViewerRun& run, int kind);
// The report a window wrote of itself in the layout dump; fails the test when absent.
const JsonValue& WindowReport(const ViewerRun& run, const std::string& window);

}  // namespace gnomon::test
