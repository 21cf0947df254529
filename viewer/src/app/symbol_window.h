// Symbol: a sampled function's machine code, disassembled, each instruction with the
// share of the function's samples found running it and the source line it is of; the
// hottest instructions listed. Opened from Samples (a click on a function) or with
// --show symbol=NAME. Built off the UI thread, over the whole trace or the selected
// range; a binary that is missing or rebuilt says so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gnomon/server/disassembly.h"
#include "gnomon/viewer/background_job.h"
#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class SymbolWindow {
 public:
  bool open = false;
  // Opens the function named `name` (or the busiest whose name contains it).
  void Show(const std::string& name) {
    name_ = name;
    open = true;
  }
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() {
    job_.Reset();
    symbolizer_ = std::make_shared<server::Symbolizer>();
    samples_ = {};
  }
  bool is_busy() { return job_.is_busy(); }

 private:
  struct Query {
    std::string name;
    server::SampleFilter filter;
    size_t samples = 0;  // a live trace's samples so far
    friend bool operator==(const Query&, const Query&) = default;
  };

  std::string name_;
  std::string shown_;  // the function last shown (name@start): a new one scrolls to its hottest
  bool limit_to_range_ = true;
  CountedOnceASecond samples_;  // a live trace's samples, counted once a second
  std::shared_ptr<server::Symbolizer> symbolizer_ = std::make_shared<server::Symbolizer>();
  BackgroundJob<Query, server::Disassembly> job_;
};

}  // namespace gnomon::viewer
