/* The smallest C integration: zones, a frame mark, a message. */
#include <gnomon/gnomon.h>
#include <string.h>
#include <time.h>

static void work(void) {
  GNOMON_ZONE_BEGIN("Work");
  struct timespec delay = {0, 2000000};
  nanosleep(&delay, NULL);
  GNOMON_ZONE_END();
}

int main(void) {
  for (int frame = 0; frame < 100; ++frame) {
    GNOMON_ZONE_BEGIN("Frame");
    work();
    GNOMON_ZONE_END();
    GNOMON_FRAME_MARK();
  }
  const char* text = "done";
  GNOMON_MESSAGE(text, strlen(text));
  return 0;
}
