// A hash for keys a stream chooses (addresses, ids), seeded per builder: a stream cannot
// pick keys that all land in one bucket of an unordered container, as it could with
// std::hash<uint64_t> (the identity) and a known bucket count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace gnomon::server {

struct SeededHash {
  uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  size_t operator()(uint64_t key) const {
    uint64_t x = key ^ seed;  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return size_t(x ^ (x >> 31));
  }
};

}  // namespace gnomon::server
