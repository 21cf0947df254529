#include "viewer_run.h"

#include <doctest/doctest.h>

#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#include <algorithm>
#include <cstdlib>

#include "../../support/xvfb.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::test {

bool Close(uint32_t a, uint32_t b) {
  for (int shift = 0; shift < 24; shift += 8) {
    if (std::abs(int((a >> shift) & 0xFF) - int((b >> shift) & 0xFF)) > 12) return false;
  }
  return true;
}

std::string WriteTraceFile(const std::string& path, const StreamWriter& w) {
  return WriteTraceFile(path, {&w});
}

std::string WriteTraceFile(const std::string& path, const std::vector<const StreamWriter*>& programs) {
  auto writer = tracefile::TraceWriter::Create(path);
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(tracefile::Overwrite::kYes).ok());
  for (size_t i = 0; i < programs.size(); ++i) {
    tracefile::TraceWriter::Stream& stream =
        i == 0 ? writer.value()->first_stream() : writer.value()->AddStream();
    stream.Append(programs[i]->data(), programs[i]->size());
  }
  REQUIRE(writer.value()->Finish().ok());
  return path;
}

ViewerRun RunViewer(const ScratchDir& dir, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& extra_env) {
  Xvfb xvfb;
  REQUIRE_MESSAGE(!xvfb.display().empty(), "Xvfb did not start");
  std::vector<std::string> argv{GNOMON_VIEWER};
  argv.insert(argv.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "--size") == args.end()) {
    argv.push_back("--size");
    argv.push_back("1200x700");
  }
  for (const std::string& extra : std::vector<std::string>{"--screenshot", dir.File("shot.png"),
                                                           "--layout-dump", dir.File("layout.json")}) {
    argv.push_back(extra);
  }
  std::map<std::string, std::string> env{{"DISPLAY", xvfb.display()}, {"XDG_CONFIG_HOME", dir.path()}};
  if (!std::string(GNOMON_ASAN_PRELOAD).empty())
    env["ASAN_OPTIONS"] = "detect_leaks=0";  // Mesa leaks at unload
  for (const auto& [key, value] : extra_env) env[key] = value;
  std::remove(dir.File("shot.png").c_str());
  std::remove(dir.File("layout.json").c_str());
  ChildProcess viewer(argv, env, dir.File("viewer.log"));
  ViewerRun run;
  run.exit_code = viewer.Wait(std::chrono::seconds(60));
  run.cpu_seconds = viewer.cpu_seconds();
  run.log = ReadFile(dir.File("viewer.log"));
  int channels = 0;
  run.shot.pixels.reset(
      stbi_load(dir.File("shot.png").c_str(), &run.shot.width, &run.shot.height, &channels, 4));
  std::string error;
  REQUIRE_MESSAGE(ParseJson(ReadFile(dir.File("layout.json")), run.layout, error), error, "\n", run.log);
  return run;
}

std::vector<std::tuple<double, double, double, std::string>> ItemsOfKind(const ViewerRun& run, int kind) {
  std::vector<std::tuple<double, double, double, std::string>> found;
  for (const JsonValue& item : run.layout.Find("items")->array) {
    if (int(item.Find("kind")->number) != kind) continue;
    found.emplace_back(item.Find("x0")->number, item.Find("x1")->number, item.Find("y0")->number,
                       item.Find("label")->string);
  }
  return found;
}

const JsonValue& WindowReport(const ViewerRun& run, const std::string& window) {
  const JsonValue* windows = run.layout.Find("windows");
  REQUIRE(windows != nullptr);
  const JsonValue* report = windows->Find(window);
  REQUIRE_MESSAGE(report != nullptr, "no report from the window '", window, "'");
  return *report;
}

}  // namespace gnomon::test
