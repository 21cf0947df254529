// The server's error values are the trace-file library's: Status and Result
// (gnomon/tracefile/status.h), the one kind of recoverable failure the project has.
#pragma once

#include "gnomon/tracefile/status.h"

namespace gnomon::server {

using tracefile::Result;
using tracefile::Status;

}  // namespace gnomon::server
