// Compare: the shown trace (A) against a second one (B, `--compare FILE` or File >
// Compare): per source location, counts, totals and means of both with the difference
// and the ratio, per frame when asked (each trace's totals over its own frames), and
// the regression check's medians and change with its confidence interval (B against
// A, server/regression.h), the main frame series' too; for the zone picked, both
// duration histograms overlaid. Everything is computed off the UI thread. A trace whose
// zones are not held (--memory-limit) gives its counts, totals and means read from its
// file (Session::StreamStatistics); the check then compares frames alone, and no zone's
// histogram is drawn.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gnomon/server/regression.h"
#include "gnomon/viewer/background_job.h"
#include "gnomon/viewer/trace_comparison.h"
#include "gnomon/viewer/zone_search.h"
#include "session.h"
#include "workspace.h"

namespace gnomon::viewer {

class CompareWindow {
 public:
  bool open = false;
  // Loads `path` as the trace to compare with, its zones within `memory_limit`
  // (Session::OpenFile).
  void OpenOther(const std::string& path, uint32_t max_expansion, uint64_t memory_limit);
  void CompareWith(std::unique_ptr<Session> other);
  bool has_other() const { return other_ != nullptr; }
  void Draw(const server::TraceModel& model, Workspace& ws);
  void Reset();
  bool is_busy();

 private:
  using Counts = std::pair<uint64_t, uint64_t>;  // zone counts of A and B when computed
  std::unique_ptr<Session> other_;
  struct Comparison {
    std::vector<ComparisonRow> rows;
    server::RegressionReport check;                     // B as the new run, A as the old
    uint64_t frames_a = 0, frames_b = 0;                // of each main frame series
    std::vector<const server::RegressionRow*> checked;  // by row of `rows`: its row of the check, or nullptr
    const server::RegressionRow* frames = nullptr;      // the main frames' row of the check
    // A trace whose zones are not held: its rows read from its file (the check then runs
    // on frames alone), and what that said; or why it failed.
    bool zones_from_file = false;
    std::string note;
    std::string error;
    // Finds `checked` and `frames` in `check`, once.
    void MatchChecks();
  };
  BackgroundJob<Counts, Comparison> rows_job_;
  bool per_frame_ = false;
  BackgroundJob<ZoneQuery, ZoneOccurrences> a_job_, b_job_;
  int picked_ = -1;  // a row of the result
  uint64_t picked_generation_ = 0;
};

}  // namespace gnomon::viewer
