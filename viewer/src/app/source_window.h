// Source: a file's lines, each with the samples found on it (self, and total with the
// calls made from the line), opened at a line from a zone's location (Zone details), a
// sampled function (Samples) or --show source=FILE:LINE; its hottest lines listed. The
// file is read from where the trace says it was built, or where the path map says
// (--source-map OLD=NEW). Lines are counted off the UI thread, over the whole trace or
// the selected range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/samples.h"
#include "gnomon/viewer/background_job.h"
#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class SourceWindow {
 public:
  bool open = false;
  // Opens FILE (a path, or its end: "demo.cpp") at `line`.
  void Show(const std::string& file, uint32_t line);
  void SetSourceMap(std::vector<std::pair<std::string, std::string>> map) { source_map_ = std::move(map); }
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() {
    job_.Reset();
    symbolizer_ = std::make_shared<server::Symbolizer>();
    samples_ = {};
    text_path_.clear();
  }
  bool is_busy() { return job_.is_busy(); }

 private:
  struct Query {
    server::SampleFilter filter;
    size_t samples = 0;  // a live trace's samples so far
    friend bool operator==(const Query&, const Query&) = default;
  };
  // Reads `path` into text_ unless it is the one read last.
  void Read(const std::string& path);

  std::string file_;
  uint32_t line_ = 1;
  bool scroll_ = false;  // bring line_ into view at the next frame
  int scroll_frames_ = 0;
  bool limit_to_range_ = true;
  std::vector<std::pair<std::string, std::string>> source_map_;
  std::string text_path_;  // the file text_ holds
  std::vector<std::string> text_;
  bool readable_ = false;
  CountedOnceASecond samples_;  // a live trace's samples, counted once a second
  std::shared_ptr<server::Symbolizer> symbolizer_ = std::make_shared<server::Symbolizer>();
  BackgroundJob<Query, server::LineSummary> job_;
};

}  // namespace gnomon::viewer
