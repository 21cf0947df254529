// Writes a TraceModel as a Perfetto protobuf trace (a Trace of TracePackets, as
// ui.perfetto.dev and trace_processor open): the process, a track per thread with its
// zones as slices, a track per GPU context with its zones and a flow from each to where
// its thread recorded it (the innermost zone open then, else an instant there), frames
// on a track per series, messages as instants, plots, memory and GPU counters as counter
// tracks; only what the filter keeps (export_filter.h), on the same timeline as the
// Chrome export (ns from the first event; Perfetto's timestamps are unsigned, so
// anything placed before the first event, such as a GPU zone its mapping puts there,
// is at 0).
//
// Packets are written as they are made, never the whole Trace: beyond the model it
// holds a few dozen bytes per GPU zone and per message (to order them and join them to
// their threads), not per CPU zone. Event names and source locations are interned, and
// each thread and GPU context is a packet sequence of its own whose default track is
// its track, so that a zone costs two small packets (about 38 bytes); every 256 KiB of
// packets are deflated into one TracePacket.compressed_packets (about 8 bytes a zone).
// A stream that fails is written no more; the caller sees its state.
#pragma once

#include <ostream>
#include <vector>

#include "gnomon/server/export_filter.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

void WritePerfettoTrace(const TraceModel& model, std::ostream& out, const ExportFilter& filter = {});
// Every program of a trace (a capture of several), each a process of its own pid with its
// own tracks, on the capture's clock (process_timeline.h).
void WritePerfettoTrace(const std::vector<const TraceModel*>& processes, std::ostream& out,
                        const ExportFilter& filter = {});

}  // namespace gnomon::server
