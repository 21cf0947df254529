// CPU data: how the program's threads used the CPUs, from the kernel's context switches
// (GNOMON_CONTEXT_SWITCHES): per thread its running time and share of the trace (or of
// the selected range), how often it was switched out and why (preempted while it could
// have run on, or blocked: a sleep, a lock, I/O), how often it moved to another core,
// and its longest wait; above, the program's and the machine's cores busy on average
// (the two plots the library records beside the switches). --show cpu-data opens it
// and shows the CPU lanes. Counted off the UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/viewer/background_job.h"
#include "widgets.h"
#include "workspace.h"

namespace gnomon::viewer {

class CpuWindow {
 public:
  bool open = false;
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset() { job_.Reset(); }
  bool is_busy() { return job_.is_busy(); }

  struct ThreadRow {
    uint32_t os_thread_id = 0;
    std::string name = {};
    int64_t running_ns = 0;
    uint64_t switches = 0, preempted = 0, migrations = 0;
    int64_t longest_wait_ns = 0;
  };
  // The rows for the ticks [begin, end] (spans clipped to them), busiest first.
  static std::vector<ThreadRow> CountThreads(const server::TraceModel& model, server::TickRange range);

 private:
  struct Query {
    uint64_t begin_tick = 0, end_tick = UINT64_MAX;
    size_t switches = 0;
    friend bool operator==(const Query&, const Query&) = default;
  };
  bool limit_to_range_ = true;
  // A live trace's switches, counted again once a second.
  CountedOnceASecond switches_;
  BackgroundJob<Query, std::vector<ThreadRow>> job_;
};

}  // namespace gnomon::viewer
