/* Every C API call, from a C99 file: the integration test checks each one arrived. */
#include <gnomon/gnomon.h>

#include <stdio.h>
#include <string.h>

static void nested(void) {
  GNOMON_ZONE_BEGIN_C("C inner", 0x3366FFu);
  gnomon_zone_text("inner text", strlen("inner text"));
  gnomon_zone_value(7);
  GNOMON_ZONE_END();
}

static void scoped(void) {
  GNOMON_ZONE_SCOPED("C scoped");
  gnomon_zone_color(0x112233u);
}

int main(void) {
  gnomon_set_thread_name("c main");
  uint32_t plot = gnomon_plot_id("c plot");
  uint32_t named = gnomon_frame_name("c frames");
  for (int i = 0; i < 5; ++i) {
    GNOMON_ZONE_BEGIN("C outer");
    gnomon_zone_name("C outer renamed", strlen("C outer renamed"));
    nested();
    scoped();
    gnomon_plot(plot, (double)i * 0.5);
    GNOMON_ZONE_END();
    gnomon_frame_mark(0);
    gnomon_frame_begin(named);
    gnomon_frame_end(named);
  }
  gnomon_frame_mark(named);
  gnomon_message("from C", strlen("from C"), GNOMON_WARNING);
  if (gnomon_now() == 0) return 1;
  printf("c program done\n");
  return 0;
}
