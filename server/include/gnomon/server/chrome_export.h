// Writes a TraceModel in the Chrome trace-event JSON format that Perfetto's UI and
// chrome://tracing open: zones as complete events per thread, thread names as metadata,
// frames on a track of their own, messages as instant events, plots as counters.
#pragma once

#include <ostream>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

void WriteChromeTrace(const TraceModel& model, std::ostream& out);

}  // namespace gnomon::server
