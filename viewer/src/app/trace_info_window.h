// Trace info: what the trace is and where it came from. The program (pid, host, rank),
// when it started and for how long it ran, the machine and the Gnomon settings it ran
// with, its timer and clocks (the CPU fit, the capture's clock against it, each GPU
// context's calibrations), what it dropped and how its stream ended, and the file.
// With a range selected, the range can be saved as a trace of its own (gnomon-cut's
// CutTrace, on a thread of its own).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class TraceInfoWindow {
 public:
  bool open = false;
  ~TraceInfoWindow();
  void Draw(const server::TraceModel& model, const Session& session, Workspace& ws);

 private:
  // Saving the selected range: the file, and the cut running or done.
  void DrawRange(const Session& session, std::pair<int64_t, int64_t> range, JsonReport& report);
  char range_path_[512] = {};
  std::string range_path_for_;  // the trace range_path_ was proposed for
  std::thread cut_thread_;
  std::atomic<bool> cutting_{false};
  std::mutex cut_mutex_;
  std::string cut_result_;  // what the last cut said (under cut_mutex_)
  std::string cut_for_;     // the trace it cut (under cut_mutex_)
  std::atomic<bool> cancel_cut_{false};
};

}  // namespace gnomon::viewer
