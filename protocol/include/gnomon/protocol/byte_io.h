// Little-endian loads and stores for the wire and file formats.
//
// Every multi-byte field Gnomon puts on the wire or on disk is little-endian and
// unaligned. These helpers are the only way the code reads or writes such fields, so
// that a big-endian port has exactly one place to change.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace gnomon::protocol {

static_assert(std::endian::native == std::endian::little,
              "Gnomon's wire format is little-endian; a big-endian host needs byte swaps in "
              "byte_io.h");

template <typename T>
inline T LoadLe(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
inline void StoreLe(uint8_t* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

}  // namespace gnomon::protocol
