/* Every C API call and macro, from a C99 file: the integration test checks each one
 * arrived. Built a second time with GNOMON_DISABLE and linked without Gnomon
 * (gnomon-test-c-program-disabled): every call must compile out. */
#include <gnomon/gnomon.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void nested(void) {
  GNOMON_ZONE_BEGIN_C("C inner", 0x3366FFu);
  GNOMON_ZONE_TEXT("inner text", strlen("inner text"));
  GNOMON_ZONE_VALUE(7);
  GNOMON_ZONE_END();
}

static void scoped(void) {
  GNOMON_ZONE_SCOPED("C scoped");
  GNOMON_ZONE_COLOR(0x112233u);
}

static int64_t raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A pretend GPU whose 48-bit counter reads CLOCK_MONOTONIC_RAW + 5 s, in 2 ns ticks. */
#define GPU_MASK ((1ull << 48) - 1)
static uint64_t gpu_ticks_at(int64_t ns) { return ((uint64_t)(ns + 5000000000ll) / 2) & GPU_MASK; }

static void gpu(void) {
  gnomon_gpu_context_info info;
  memset(&info, 0, sizeof(info));
  info.api = GNOMON_GPU_API_UNKNOWN;
  info.device_name = "C test GPU";
  gnomon_gpu_period_from_float(2.0, &info.period_numerator_ns, &info.period_denominator);
  info.valid_bits = 48;
  info.flags = GNOMON_GPU_CONTEXT_CALIBRATED;
  int64_t now = raw_ns();
  info.gpu_ticks = gpu_ticks_at(now);
  info.cpu_time = (uint64_t)now;
  info.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
  info.uncertainty_ns = 20;
  uint32_t context = gnomon_gpu_context_create(&info);
  gnomon_gpu_context_name(context, "C queue", strlen("C queue"));
  int64_t previous = now;
  for (uint32_t i = 0; i < 4; ++i) {
    static gnomon_source_location pass = {"C GPU pass", "gpu", __FILE__, __LINE__, GNOMON_NO_COLOR, 0};
    gnomon_gpu_zone_begin(context, 2 * i, &pass);
    gnomon_gpu_zone_end(context, 2 * i + 1);
    /* The "GPU" ran the pass from 1 ms to 3 ms after now. */
    int64_t at = raw_ns();
    gnomon_gpu_time(context, 2 * i, gpu_ticks_at(at + 1000000));
    gnomon_gpu_time(context, 2 * i + 1, gpu_ticks_at(at + 3000000));
    struct timespec delay = {0, 5000000};
    nanosleep(&delay, NULL);
    gnomon_gpu_calibration_data calibration;
    int64_t t = raw_ns();
    calibration.gpu_ticks = gpu_ticks_at(t);
    calibration.cpu_time = (uint64_t)t;
    calibration.cpu_delta_ns = t - previous;
    calibration.uncertainty_ns = 20;
    calibration.context = context;
    calibration.cpu_domain = GNOMON_CPU_TIME_MONOTONIC_RAW;
    gnomon_gpu_calibration(&calibration);
    previous = t;
  }
  int64_t host = raw_ns();
  uint64_t ticks = gnomon_cpu_time_from_host_ns(GNOMON_CPU_TIME_MONOTONIC_RAW, host);
  uint64_t now_ticks = gnomon_now();
  printf("host-to-ticks %s\n", ticks <= now_ticks ? "ok" : "ahead of now");
}

static void memory_and_locks(void) {
  static int blocks[2];
  GNOMON_ALLOC(&blocks[0], 100);
  GNOMON_ALLOC_NAMED(&blocks[1], 200, "c pool");
  GNOMON_FREE(&blocks[0]);
  uint32_t lock = gnomon_lock_create("c mutex");
  gnomon_lock_wait(lock);
  gnomon_lock_obtain(lock);
  gnomon_lock_release(lock);
  gnomon_lock_obtain_shared(lock);
  gnomon_lock_release(lock);
}

/* The calls the macros stand for, and the rest of the surface. */
static void direct_calls(void) {
  GNOMON_ZONE_BEGIN("C direct");
  gnomon_zone_name("C direct renamed", strlen("C direct renamed"));
  gnomon_zone_text("direct text", strlen("direct text"));
  gnomon_zone_color(0x445566u);
  gnomon_zone_value(9);
  GNOMON_ZONE_END();
  uint32_t plot = gnomon_plot_id("c direct plot");
  gnomon_plot(plot, 2.5);
  gnomon_message("direct message", strlen("direct message"), GNOMON_DEBUG);
  printf("connected %d, port %u, dropped %llu\n", gnomon_is_connected(), (unsigned)gnomon_listen_port(),
         (unsigned long long)gnomon_dropped_events());
}

int main(void) {
  GNOMON_THREAD_NAME("c main");
  uint32_t named = gnomon_frame_name("c frames");
  for (int i = 0; i < 5; ++i) {
    GNOMON_ZONE_BEGIN("C outer");
    GNOMON_ZONE_NAME("C outer renamed", strlen("C outer renamed"));
    nested();
    scoped();
    GNOMON_PLOT("c plot", (double)i * 0.5);
    GNOMON_ZONE_END();
    GNOMON_FRAME_MARK();
    gnomon_frame_begin(named);
    gnomon_frame_end(named);
  }
  GNOMON_FRAME_MARK_NAMED("c frames");
  gpu();
  memory_and_locks();
  direct_calls();
  GNOMON_MESSAGE_SEVERITY("from C", strlen("from C"), GNOMON_WARNING);
#ifndef GNOMON_DISABLE
  if (gnomon_now() == 0) return 1;
#endif
  printf("c program done\n");
  return 0;
}
