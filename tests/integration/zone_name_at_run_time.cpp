// Compiled (never built) by tracy_compat_test: a zone's name made at run time. A zone's
// source location is made once, so such a name would be read after it is gone, or every
// zone would take the first one; Tracy's interface and Gnomon's own refuse to compile it.
// With GNOMON_TEST_CONSTANT_NAMES, the names are constants, and it compiles.
#include <string>
#include <tracy/Tracy.hpp>

void Work(int i) {
#ifdef GNOMON_TEST_CONSTANT_NAMES
  static constexpr const char* kName = "constant";
  ZoneScopedN(kName);
  GNOMON_ZONE("literal");
  ZoneNamedNC(coloured, "coloured", 0xFF0000, true);
#elif defined(GNOMON_TEST_NATIVE)
  const std::string name = "zone " + std::to_string(i);
  GNOMON_ZONE(name.c_str());
#else
  const char* names[] = {"a", "b", "c"};
  ZoneScopedN(names[i % 3]);
  ZoneNamedN(temporary, std::to_string(i).c_str(), true);
#endif
  (void)i;
}

int main() { Work(1); }
