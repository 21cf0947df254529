// Call stacks, each distinct one stored once, and the modules that map their addresses.
//
// A capture with call stacks at every zone holds millions of stacks but few distinct
// ones: the table keeps each sequence of frames once, under an id (0: no stack), so a
// zone or an allocation or a sample costs its id. Frames are the program's raw
// addresses; a Symbolizer (symbolizer.h) turns them into functions and lines.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnomon/server/chunked_vector.h"
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

// A thread's zones' call stacks (CallstackTable ids), by zone index: 16 bytes a stack.
//
// A program may take a stack at every zone, so this holds as many as the thread has
// zones. A stack belongs to the zone just begun, the thread's latest, so entries come in
// increasing zone order: appended (nothing allocated per stack, nothing hashed), found by
// a binary search.
class ZoneCallstacks {
 public:
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Whether `zone` may get a stack: it comes after every zone that has one.
  bool Accepts(uint64_t zone) const { return entries_.empty() || entries_.back().zone < zone; }
  // Gives `zone` the stack `id`; only where Accepts(zone) (else nothing changes).
  void Add(uint64_t zone, uint32_t id) {
    if (Accepts(zone)) entries_.push_back({zone, id});
  }
  // The stack of `zone`, if it has one.
  std::optional<uint32_t> find(uint64_t zone) const {
    const size_t i = entries_.PartitionPoint([zone](const Entry& e) { return e.zone < zone; });
    if (i == entries_.size() || entries_[i].zone != zone) return std::nullopt;
    return entries_[i].id;
  }
  bool contains(uint64_t zone) const { return find(zone).has_value(); }
  // The stack of a zone that has one; throws std::out_of_range otherwise.
  uint32_t at(uint64_t zone) const {
    if (auto id = find(zone)) return *id;
    throw std::out_of_range("zone " + std::to_string(zone) + " has no call stack");
  }
  // Gives back the unused end of the last chunk, once no more are expected.
  void ShrinkToFit() { entries_.ShrinkToFit(); }
  size_t capacity_bytes() const { return entries_.capacity_bytes(); }
  friend bool operator==(const ZoneCallstacks& a, const ZoneCallstacks& b) {
    return a.entries_ == b.entries_;
  }

 private:
  struct Entry {
    uint64_t zone;
    uint32_t id;
    uint32_t unused = 0;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  static_assert(sizeof(Entry) == 16);
  ChunkedVector<Entry> entries_;  // by increasing zone
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
