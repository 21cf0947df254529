// Samples: where the program spent its time by the kernel's statistical samples
// (GNOMON_SAMPLING_HZ), code with zones or without: the functions most often running
// (self and total, with their source line and module) and a flame graph of the sampled
// stacks, for one thread or all, over the whole trace or the selected range. Built off
// the UI thread, symbolized from the program's own files.
#pragma once

#include <cstdint>
#include <memory>

#include "gnomon/server/samples.h"
#include "gnomon/viewer/background_job.h"
#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class SamplesWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() {
    job_.Reset();
    focus_ = 0;
    samples_ = {};
    symbolizer_ = std::make_shared<server::Symbolizer>();
  }
  bool is_busy() { return job_.is_busy(); }
  // The flame graph rather than the table of functions (--show samples=flame).
  void ShowFlameGraph(bool show) { show_flame_graph_ = show; }

 private:
  struct Query {
    server::SampleFilter filter;
    size_t samples = 0;  // a live trace's samples so far
    friend bool operator==(const Query&, const Query&) = default;
  };
  struct Result {
    server::SampleSummary summary;
    server::SampleTree tree;
  };
  void DrawTable(const Result& result, Workspace& ws);
  void DrawFlameGraph(const Result& result, Workspace& ws);

  uint32_t os_thread_id_ = 0;   // 0: every thread
  CountedOnceASecond samples_;  // a live trace's samples, counted once a second
  bool limit_to_range_ = true;
  bool show_flame_graph_ = false;
  uint32_t focus_ = 0;
  uint64_t focus_generation_ = 0;
  // Used by the job's thread only (one computation at a time).
  std::shared_ptr<server::Symbolizer> symbolizer_ = std::make_shared<server::Symbolizer>();
  BackgroundJob<Query, Result> job_;
};

}  // namespace gnomon::viewer
