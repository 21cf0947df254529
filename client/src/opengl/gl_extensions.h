// Whether the current GL context lists an extension, through the program's loader.
#pragma once

#include <cstdint>
#include <cstring>

#include "gnomon/opengl.hpp"

namespace gnomon::opengl {

inline bool HasGlExtension(GetProcAddress loader, const char* name) {
  constexpr uint32_t kNumExtensions = 0x821D;
  constexpr uint32_t kExtensions = 0x1F03;
  auto get_integerv = reinterpret_cast<void (*)(uint32_t, int32_t*)>(loader("glGetIntegerv"));
  auto get_stringi = reinterpret_cast<const uint8_t* (*)(uint32_t, uint32_t)>(loader("glGetStringi"));
  if (get_integerv == nullptr || get_stringi == nullptr) return false;
  int32_t count = 0;
  get_integerv(kNumExtensions, &count);
  for (int32_t i = 0; i < count; ++i) {
    const auto* extension = reinterpret_cast<const char*>(get_stringi(kExtensions, uint32_t(i)));
    if (extension != nullptr && std::strcmp(extension, name) == 0) return true;
  }
  return false;
}

}  // namespace gnomon::opengl
