// Memory mappings for tests of code that maps and unmaps: whether a range is mapped, and
// a mapping planted at a chosen address (where a freed range used to be) that can tell
// whether someone unmapped or overwrote it since.
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gnomon::test {

// Whether every page of [address, address + bytes) is mapped (msync fails with ENOMEM
// on a range with a hole).
inline bool IsMapped(const void* address, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(address) & ~uintptr_t{4095};
  const size_t length = reinterpret_cast<uintptr_t>(address) + bytes - start;
  return msync(reinterpret_cast<void*>(start), length, MS_ASYNC) == 0;
}

// An anonymous mapping at exactly `address` (never replacing one), filled with a pattern.
class PlantedMapping {
 public:
  PlantedMapping(void* address, size_t bytes) : bytes_(bytes) {
    void* got = mmap(address, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) return;
    if (got != address) {  // a kernel without MAP_FIXED_NOREPLACE treats it as a hint
      munmap(got, bytes);
      return;
    }
    address_ = static_cast<uint8_t*>(got);
    std::memset(address_, kPattern, bytes_);
  }
  ~PlantedMapping() {
    if (address_ != nullptr && IsMapped(address_, bytes_)) munmap(address_, bytes_);
  }
  PlantedMapping(const PlantedMapping&) = delete;
  PlantedMapping& operator=(const PlantedMapping&) = delete;

  bool ok() const { return address_ != nullptr; }
  // Still mapped, and every byte as it was planted.
  bool is_intact() const {
    if (address_ == nullptr || !IsMapped(address_, bytes_)) return false;
    for (size_t i = 0; i < bytes_; i += 512) {
      if (address_[i] != kPattern) return false;
    }
    return address_[bytes_ - 1] == kPattern;
  }

 private:
  static constexpr uint8_t kPattern = 0xC3;
  uint8_t* address_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gnomon::test
