#include "gnomon/server/callstacks.h"

#include <algorithm>

namespace gnomon::server {
namespace {

uint64_t Hash(std::span<const uint64_t> frames) {
  uint64_t h = 0xcbf29ce484222325ull ^ frames.size();
  for (uint64_t f : frames) {
    h ^= f;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

uint32_t CallstackTable::Intern(std::span<const uint64_t> frames) {
  if (frames.size() > kMaxCallstackDepth) frames = frames.first(kMaxCallstackDepth);
  if (frames.empty()) return 0;
  const uint64_t hash = Hash(frames);
  auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const std::span<const uint64_t> known = Frames(it->second);
    if (std::equal(known.begin(), known.end(), frames.begin(), frames.end())) return it->second;
  }
  if (ends_.size() >= kMaxCallstacks || frames_.size() + frames.size() > kMaxCallstackFrames) return 0;
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  ends_.push_back(frames_.size());
  const uint32_t id = uint32_t(ends_.size());
  by_hash_.emplace(hash, id);
  return id;
}

std::span<const uint64_t> CallstackTable::Frames(uint32_t id) const {
  if (id == 0 || id > ends_.size()) return {};
  const uint64_t begin = id == 1 ? 0 : ends_[id - 2];
  return {frames_.data() + begin, size_t(ends_[id - 1] - begin)};
}

}  // namespace gnomon::server
