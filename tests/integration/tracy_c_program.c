/* A C program written against Tracy's C interface only (tracy/TracyC.h): zones with
 * attributes, run-time locations, memory, plots, messages, frames, a lock shared by
 * two threads, and a GPU context fed as a language binding feeds it, with the
 * calibration extension that passes the CPU time of each pair. Built twice: linked with
 * gnomon::tracy, and without TRACY_ENABLE and without Gnomon (it must run and open no
 * port). tracy_compat_test.cpp checks the capture. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracy/TracyC.h"

#define LOCKED_ITERATIONS 200

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
#ifdef TRACY_ENABLE
static TracyCLockCtx(lock_ctx);
#endif
static int counter = 0;

/* One tracked acquisition of the shared lock, in Tracy's order of calls. */
static void locked_increment(void) {
  TracyCLockBeforeLock(lock_ctx);
  pthread_mutex_lock(&mutex);
  TracyCLockAfterLock(lock_ctx);
  ++counter;
  pthread_mutex_unlock(&mutex);
  TracyCLockAfterUnlock(lock_ctx);
}

static void* locker(void* arg) {
  (void)arg;
  TracyCSetThreadName("tracy c locker");
  for (int i = 0; i < LOCKED_ITERATIONS; ++i) {
    TracyCZoneN(zone, "tracy c locked", 1);
    locked_increment();
    TracyCZoneEnd(zone);
  }
  return NULL;
}

/* Waits for the lock main holds for 20 ms: an acquisition Tracy's calls cannot tell
 * from a fast one except by its length. Says when it is about to wait, so that a slow
 * start of the thread (a loaded machine) does not shorten the wait. */
static int waiter_started;
static void* waiter(void* arg) {
  (void)arg;
  __atomic_store_n(&waiter_started, 1, __ATOMIC_RELEASE);
  locked_increment();
  return NULL;
}

#ifdef TRACY_ENABLE
static int64_t raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(long us) {
  struct timespec delay = {0, us * 1000};
  nanosleep(&delay, NULL);
}

/* A pretend GPU whose counter reads CLOCK_MONOTONIC_RAW + 7 s in 1 ns ticks. For each
 * pass the program records a CPU zone "tracy c marker" around the instant the pass is
 * said to begin on the GPU: on the timeline, the GPU pass must begin inside it. */
static int64_t gpu_at(int64_t raw) { return raw + 7000000000ll; }

static void gpu(void) {
  struct ___tracy_gpu_new_context_cpu_time_data context;
  memset(&context, 0, sizeof(context));
  int64_t now = raw_ns();
  context.gpuTime = gpu_at(now);
  context.cpuTime = now;
  context.period = 1.0f;
  context.deviation = 50;
  context.context = 3;
  context.flags = 1;
  context.type = 2;
  context.cpuClock = ___gnomon_tracy_cpu_clock_monotonic_raw;
  ___tracy_emit_gpu_new_context_cpu_time(context);
  struct ___tracy_gpu_context_name_data name = {3, "tracy c queue", 13};
  ___tracy_emit_gpu_context_name(name);
  uint64_t pass = ___tracy_alloc_srcloc_name(__LINE__, __FILE__, strlen(__FILE__), "gpu", 3,
                                             "tracy c gpu pass", strlen("tracy c gpu pass"), 0);
  int64_t previous = now;
  for (uint16_t i = 0; i < 5; ++i) {
    struct ___tracy_gpu_zone_begin_data begin = {pass, (uint16_t)(2 * i), 3};
    ___tracy_emit_gpu_zone_begin_alloc(begin);
    struct ___tracy_gpu_zone_end_data end = {(uint16_t)(2 * i + 1), 3};
    ___tracy_emit_gpu_zone_end(end);
    TracyCZoneN(marker, "tracy c marker", 1);
    int64_t at = raw_ns();
    TracyCZoneEnd(marker);
    struct ___tracy_gpu_time_data t0 = {gpu_at(at), (uint16_t)(2 * i), 3};
    struct ___tracy_gpu_time_data t1 = {gpu_at(at) + 250000, (uint16_t)(2 * i + 1), 3};
    ___tracy_emit_gpu_time(t0);
    ___tracy_emit_gpu_time(t1);
    sleep_us(2000);
    struct ___tracy_gpu_calibration_cpu_time_data calibration;
    memset(&calibration, 0, sizeof(calibration));
    int64_t t = raw_ns();
    calibration.gpuTime = gpu_at(t);
    calibration.cpuTime = t;
    calibration.cpuDelta = t - previous;
    calibration.deviation = 50;
    calibration.context = 3;
    calibration.cpuClock = ___gnomon_tracy_cpu_clock_monotonic_raw;
    ___tracy_emit_gpu_calibration_cpu_time(calibration);
    previous = t;
  }

  /* Context 4 through Tracy's own calls, whose CPU times are read at the call: the
   * zones are placed, with the wide bound such pairs get. */
  struct ___tracy_gpu_new_context_data plain = {gpu_at(raw_ns()), 1.0f, 4, 1, 2};
  ___tracy_emit_gpu_new_context(plain);
  static const struct ___tracy_source_location_data plain_pass = {"tracy c plain pass", "gpu", __FILE__,
                                                                  __LINE__, 0};
  for (uint16_t i = 0; i < 3; ++i) {
    struct ___tracy_gpu_zone_begin_data begin = {(uint64_t)(uintptr_t)&plain_pass, (uint16_t)(2 * i), 4};
    ___tracy_emit_gpu_zone_begin(begin);
    struct ___tracy_gpu_zone_end_data end = {(uint16_t)(2 * i + 1), 4};
    ___tracy_emit_gpu_zone_end(end);
    int64_t at = raw_ns();
    struct ___tracy_gpu_time_data t0 = {gpu_at(at), (uint16_t)(2 * i), 4};
    struct ___tracy_gpu_time_data t1 = {gpu_at(at) + 100000, (uint16_t)(2 * i + 1), 4};
    ___tracy_emit_gpu_time(t0);
    ___tracy_emit_gpu_time(t1);
    sleep_us(2000);
    int64_t t = raw_ns();
    struct ___tracy_gpu_calibration_data calibration = {gpu_at(t), 2000000, 4};
    ___tracy_emit_gpu_calibration(calibration);
  }
}
#else
static void gpu(void) {}
#endif

int main(void) {
  TracyCSetThreadName("tracy c main");
  TracyCAppInfo("tracy c app", 11);
  TracyCMessageL("tracy c hello");
  TracyCLockAnnounce(lock_ctx);
  TracyCLockCustomName(lock_ctx, "tracy c mutex", 13);
  for (int i = 0; i < 5; ++i) {
    TracyCZoneNC(outer, "tracy c outer", 0x3366FF, 1);
    TracyCZoneText(outer, "outer text", 10);
    TracyCZoneValue(outer, (uint64_t)i);
    {
      TracyCZone(inner, 1);
      TracyCZoneName(inner, "tracy c renamed", 15);
      TracyCZoneColor(inner, 0x112233);
      TracyCZoneEnd(inner);
    }
    TracyCZoneN(off, "tracy c inactive", 0);
    TracyCZoneEnd(off);
    void* block = malloc(100);
    TracyCAllocN(block, 100, "tracy c pool");
    TracyCFreeN(block, "tracy c pool");
    free(block);
    TracyCPlot("tracy c plot", (double)i);
    TracyCPlotI("tracy c plot", (int64_t)i);
    TracyCFrameMark;
    TracyCZoneEnd(outer);
  }
  TracyCFrameMarkNamed("tracy c frames");
  {
    pthread_t blocked;
    TracyCLockBeforeLock(lock_ctx);
    pthread_mutex_lock(&mutex);
    TracyCLockAfterLock(lock_ctx);
    pthread_create(&blocked, NULL, waiter, NULL);
    while (!__atomic_load_n(&waiter_started, __ATOMIC_ACQUIRE)) sched_yield();
    struct timespec hold = {0, 20000000};
    nanosleep(&hold, NULL);
    pthread_mutex_unlock(&mutex);
    TracyCLockAfterUnlock(lock_ctx);
    pthread_join(blocked, NULL);
  }
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, locker, NULL);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  TracyCLockTerminate(lock_ctx);
  gpu();
  printf("tracy c program done: counter %d, connected %d\n", counter, (int)TracyCIsConnected);
  return counter == 2 * LOCKED_ITERATIONS + 1 ? 0 : 1;
}
