// A program written for Tracy, switched to Gnomon by linking gnomon::tracy.
#include <cstdio>
#include <tracy/Tracy.hpp>

int main() {
  { ZoneScopedN("Tracy consumer zone"); }
  FrameMark;
#ifdef TRACY_ENABLE
  std::printf("tracy consumer recorded with TRACY_ENABLE, listening on port %u\n",
              unsigned{gnomon_listen_port()});
#endif
  return 0;
}
