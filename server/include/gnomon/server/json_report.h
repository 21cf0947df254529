// The report as one JSON object (gnomon-report --json): what the text report says, for
// scripts and CI checks. Keys (all times in ns, relative to the trace's first event
// where they are points in time):
//
//   program          {name, pid, start_unix_ns}
//   processes        [{name, pid, host, rank, clock_offset_ns, clock_drift_ppm,
//                      clock_uncertainty_ns, clock_exchanges, clock_epochs,
//                      clock_rejected, clock_contradicted, threads, zones}]: every
//                      program of the trace, its clock against the capture's (null
//                      where the trace has no clock exchanges)
//   across_processes with several programs: {zones: [{name, processes,
//                      fastest_mean_ns, slowest_mean_ns, spread_ns, slowest: {pid,
//                      rank}}] by spread, frames: {steps, slowest: [{pid, rank, steps,
//                      worst_lag_ns}]}} (statistics.h, CompareProcessZones/Frames)
//   duration_ns
//   threads          [{id, os_thread_id, name, zones}]
//   zones            [{name, function, file, line, count, total_ns, self_ns, mean_ns,
//                      median_ns, min_ns, max_ns, stddev_ns}], by total time
//   gpu_zones        the same for GPU zones, on the GPU's clock
//   frames           [{name, count, mean_ns, min_ns, max_ns, p50_ns, p90_ns, p99_ns}]
//   plots            [{name, values}]
//   messages         [{time_ns, severity, thread, text}]
//   gpu_contexts     [{id, name, device, api, zones, untimed_zones, calibrations,
//                      rejected_calibrations, drift_ppm, relative_bound_ns,
//                      absolute_early_ns, absolute_late_ns, brackets,
//                      bracket_correction_ns, flagged_calibrations}]
//   memory           [{pool, allocations, frees, unmatched_frees, allocated_bytes,
//                      peak_bytes, peak_time_ns, leaked_allocations, leaked_bytes}]
//   locks            [{name, acquisitions, contended, shared, threads, wait_total_ns,
//                      wait_max_ns, hold_total_ns, hold_max_ns}], most waited-for first
//   samples          {count, top: [{function, module, file, line, self_count,
//                      total_count}]}, the 20 functions most often running
//   context_switches {count (times a thread was switched out),
//                     threads: [{os_thread_id, switches, running_ns}]}
//   dropped_events, ended_cleanly, diagnostics {name: count}
//
// Strings are valid UTF-8, escaped as JSON requires (text.h).
#pragma once

#include <ostream>
#include <vector>

#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_model.h"

namespace gnomon::server {

// The report of `model`. `processes`: every program of its trace (a capture of several
// programs, `model` the first of them), listed in "processes"; empty: `model` alone.
// A memory pool's call tree of allocations (AllocationTree) as JSON: its nodes in order,
// node 0 the root, each with its parent's index.
void WriteMemoryTreeJson(const TraceModel& model, const MemoryPool& pool, bool bottom_up, std::ostream& out);

// `hot_lines`: the source lines the samples found most often running, listed.
// `zone_statistics`: the CPU zone statistics of each program (of `processes`, or of
// `model` alone) when they are known already, as for a model whose zones are not held
// (StreamZoneStatistics); nullptr: computed from the zones.
void WriteJsonReport(const TraceModel& model, std::ostream& out,
                     const std::vector<const TraceModel*>& processes = {}, size_t hot_lines = 20,
                     const std::vector<std::vector<ZoneStatistics>>* zone_statistics = nullptr);

}  // namespace gnomon::server
