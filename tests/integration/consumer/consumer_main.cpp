#include <cstdio>
#include <gnomon/gnomon.hpp>

int main() {
  { GNOMON_ZONE("Consumer zone"); }
  GNOMON_FRAME_MARK();
  std::printf("consumer recorded, listening on port %u\n", unsigned{gnomon_listen_port()});
  return 0;
}
