/* Records a zone, a plot and a message from C, and says so once a server has them. */
#include <gnomon/gnomon.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  GNOMON_THREAD_NAME("c consumer");
  for (int i = 0; i < 3; ++i) {
    GNOMON_ZONE_BEGIN("C consumer zone");
    GNOMON_PLOT("c consumer plot", (double)i);
    GNOMON_ZONE_END();
  }
  GNOMON_MESSAGE("c consumer", strlen("c consumer"));
  printf("c consumer recorded, now %s\n", gnomon_now() > 0 ? "ticking" : "stopped");
  return 0;
}
