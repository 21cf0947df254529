// What the windows of the viewer share while one trace is shown: the session, the
// timeline and its view, the lanes' states, the selection, and the requests one window
// makes of another (show this zone, find that location).
//
// Each window is a small class of its own (its state, and Draw(model, workspace)); App
// owns them and the workspace, and builds the frame. A window never reaches into
// another: it changes the workspace, and the window concerned acts on it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "gnomon/server/trace_model.h"
#include "gnomon/viewer/timeline.h"
#include "gnomon/viewer/timeline_view.h"
#include "session.h"

namespace gnomon::viewer {

struct Selection {
  LaneKey lane;
  DrawItem::Kind kind;
  uint32_t index;
};

struct Workspace {
  Session* session = nullptr;
  Timeline timeline;
  TimelineView view;
  std::map<LaneKey, LaneState> lane_states;  // only the lanes the user changed
  std::optional<Selection> selected;
  bool fitted = false;  // the view was fitted to the trace (false: fit it next frame)
  bool follow = true;   // live: keep the newest data in view

  // Find zone is asked to show this source location (CPU or GPU zones).
  struct FindRequest {
    uint32_t location = 0;
    bool gpu = false;
  };
  std::optional<FindRequest> find_request;

  // Shows [begin_ns, end_ns] (trace-relative) with a margin, and stops following.
  void JumpTo(int64_t begin_ns, int64_t end_ns) {
    const int64_t margin = std::max<int64_t>((end_ns - begin_ns) / 2, 100);
    view.Fit(begin_ns - margin, end_ns + margin, view.width_px());
    follow = false;
  }
  // Nanoseconds of `tick` since the trace's first event.
  static int64_t RelNs(const server::TraceModel& model, uint64_t tick) {
    return model.clock.TickToNs(tick) - model.clock.TickToNs(model.first_tick);
  }
};

}  // namespace gnomon::viewer
