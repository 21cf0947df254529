// Call stacks of the recording thread, and the modules their addresses lie in.
//
// CaptureCallstack() unwinds the calling thread with glibc's backtrace() (libgcc's
// DWARF unwinder, lock-free once warmed up), about a microsecond for eight frames.
// The frames go to the server raw, right after the event they belong to, in the same
// reservation; the server symbolizes them from the modules the program announces
// (ModuleDef, sent by ModuleMap from the sender's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gnomon::client {

// Up to `depth` return addresses, innermost first, starting with the caller of the
// function that calls this (that function's own frame and `skip` more are left out).
// Returns how many were written to `frames`.
size_t CaptureCallstack(uint64_t* frames, size_t depth, size_t skip);
// Unwinds once, so that the first real capture finds the unwinder loaded (it allocates
// on first use). Called at start-up.
void WarmUpCallstacks();

// The program's loaded modules, announced once each.
class ModuleMap {
 public:
  // Appends a ModuleDef for every module loaded since the last call to `definitions`.
  void AppendNew(std::vector<uint8_t>& definitions);

 private:
  std::vector<uint64_t> known_starts_;
};

}  // namespace gnomon::client
