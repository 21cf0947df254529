// A canonical text form of a TraceModel, for golden files: every field a reader sees,
// each collection as its size, a 64-bit hash of its contents, and its first entries in
// full (so that a difference can be found). Two models with the same dump hold the same
// events, names, clocks and counts.
#pragma once

#include <string>

#include "gnomon/server/trace_model.h"

namespace gnomon::test {

std::string DumpModel(const server::TraceModel& model);

}  // namespace gnomon::test
