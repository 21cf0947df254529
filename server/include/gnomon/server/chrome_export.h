// Writes a TraceModel in the Chrome trace-event JSON format that Perfetto's UI and
// chrome://tracing open: zones as complete events per thread, thread names as metadata,
// frames on a track of their own, messages as instant events, plots as counters; only
// what the filter keeps (export_filter.h).
#pragma once

#include <ostream>
#include <vector>

#include "gnomon/server/export_filter.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

void WriteChromeTrace(const TraceModel& model, std::ostream& out, const ExportFilter& filter = {});
// Every program of a trace (a capture of several), each a process of its own pid, on the
// capture's clock (process_timeline.h): a program 1,000 s ahead lands where it happened.
void WriteChromeTrace(const std::vector<const TraceModel*>& processes, std::ostream& out,
                      const ExportFilter& filter = {});

}  // namespace gnomon::server
