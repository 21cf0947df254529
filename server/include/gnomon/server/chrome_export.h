// Writes a TraceModel in the Chrome trace-event JSON format that Perfetto's UI and
// chrome://tracing open: zones as complete events per thread, thread names as metadata,
// frames on a track of their own, messages as instant events, plots as counters; only
// what the filter keeps (export_filter.h).
#pragma once

#include <ostream>

#include "gnomon/server/export_filter.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

void WriteChromeTrace(const TraceModel& model, std::ostream& out, const ExportFilter& filter = {});

}  // namespace gnomon::server
