// Call stacks, each distinct one stored once, and the modules that map their addresses.
//
// A capture with call stacks at every zone holds millions of stacks but few distinct
// ones: the table keeps each sequence of frames once, under an id (0: no stack), so a
// zone or an allocation or a sample costs its id. Frames are the program's raw
// addresses; a Symbolizer (symbolizer.h) turns them into functions and lines.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/server/seeded_hash.h"

namespace gnomon::server {

// Frames kept of one stack; deeper ones are cut (counted in the model's diagnostics).
inline constexpr size_t kMaxCallstackDepth = 256;
// Distinct stacks and frames kept; past them a stack is not stored (its id is 0).
inline constexpr size_t kMaxCallstacks = size_t{1} << 24;
inline constexpr size_t kMaxCallstackFrames = size_t{1} << 28;

class CallstackTable {
 public:
  // The id of this stack (made at first sight), or 0 for an empty one or past the
  // table's limits. At most kMaxCallstackDepth frames are read.
  uint32_t Intern(std::span<const uint64_t> frames);
  // The frames of a stack, innermost first; empty for 0 or an unknown id.
  std::span<const uint64_t> Frames(uint32_t id) const;
  size_t size() const { return ends_.size(); }
  friend bool operator==(const CallstackTable& a, const CallstackTable& b) {
    return a.frames_ == b.frames_ && a.ends_ == b.ends_;
  }

 private:
  std::vector<uint64_t> frames_;                                     // every stack's frames, back to back
  std::vector<uint64_t> ends_;                                       // stack id - 1 -> its end in frames_
  std::unordered_multimap<uint64_t, uint32_t, SeededHash> by_hash_;  // hash of the frames -> ids
};

// A file mapped into the program (protocol::ModuleDef).
struct Module {
  uint64_t load_bias = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string path;
  std::string build_id;  // hex; empty when the file has none
  friend bool operator==(const Module&, const Module&) = default;
};

}  // namespace gnomon::server
