// CUPTI glue for gnomon::cuda::Collector: callbacks and activity buffers in, calls on
// the Timeline (cuda_timeline.h, where the logic and its tests are) out.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "cuda_timeline.h"
#include "gnomon/cuda.hpp"
#include "gnomon/gnomon.h"

namespace gnomon::client {
void NameLibraryThread(const char* name);  // core/profiler.h: the collector's threads are the library's
}  // namespace gnomon::client

namespace gnomon::cuda {

namespace {

int64_t MonotonicRawNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

BracketRead ReadCuptiClock() {
  BracketRead read;
  read.cpu_before_ns = MonotonicRawNs();
  cuptiGetTimestamp(&read.gpu_ns);
  read.cpu_after_ns = MonotonicRawNs();
  return read;
}

std::string DeviceName(uint32_t ordinal) {
  CUdevice device = 0;
  char name[256] = {};
  if (cuDeviceGet(&device, int(ordinal)) != CUDA_SUCCESS ||
      cuDeviceGetName(name, sizeof(name), device) != CUDA_SUCCESS) {
    return "device " + std::to_string(ordinal);
  }
  return name;
}

const char* CopyName(int kind) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return "memcpy HtoH";
    case cudaMemcpyHostToDevice:
      return "memcpy HtoD";
    case cudaMemcpyDeviceToHost:
      return "memcpy DtoH";
    case cudaMemcpyDeviceToDevice:
      return "memcpy DtoD";
    default:
      return "memcpy";
  }
}

std::string ResultString(CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return text ? text : "CUPTI error " + std::to_string(int(result));
}

// What a traced call puts on the GPU: its stream and the zone's name.
struct Launch {
  cudaStream_t stream = nullptr;
  bool per_thread_stream = false;
  const char* name = nullptr;  // nullptr: the kernel's symbol
};

bool DescribeLaunch(CUpti_CallbackId id, const void* params, Launch& launch) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      launch.stream = static_cast<const cudaLaunchKernel_v7000_params*>(params)->stream;
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      launch.stream = static_cast<const cudaLaunchKernel_ptsz_v7000_params*>(params)->stream;
      launch.per_thread_stream = true;
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const cudaLaunchConfig_t* config =
          static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->config;
      launch.stream = config ? config->stream : nullptr;
      launch.per_thread_stream = id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
      launch.name = CopyName(static_cast<const cudaMemcpy_v3020_params*>(params)->kind);
      launch.per_thread_stream = id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000;
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      const auto* p = static_cast<const cudaMemcpyAsync_v3020_params*>(params);
      launch.name = CopyName(p->kind);
      launch.stream = p->stream;
      launch.per_thread_stream = id == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
      launch.name = "memset";
      launch.per_thread_stream = id == CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000;
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
      launch.name = "memset";
      launch.stream = static_cast<const cudaMemsetAsync_v3020_params*>(params)->stream;
      launch.per_thread_stream = id == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000;
      return true;
    default:
      return false;
  }
}

constexpr CUpti_CallbackId kTracedCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
};

constexpr CUpti_ActivityKind kTracedActivities[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                                    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// Allocations and frees of every kind of CUDA memory, whoever made them (the runtime,
// the driver, a library): a memory pool per kind and device.
constexpr CUpti_ActivityKind kMemoryActivity = CUPTI_ACTIVITY_KIND_MEMORY2;

const char* MemoryKindName(CUpti_ActivityMemoryKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "pageable host";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "pinned host";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "managed";
    default:
      return "other";
  }
}

thread_local bool t_is_collector_thread = false;

}  // namespace

struct Collector::State {
  explicit State(const CollectorOptions& o)
      : options(o),
        timeline(ReadCuptiClock, DeviceName, o.calibration_reads),
        pool(o.buffer_bytes, o.max_buffers) {}

  CollectorOptions options;
  Timeline timeline;
  BufferPool pool;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<uint64_t> kernels{0}, memcpys{0}, memsets{0}, allocations{0}, frees{0};
  // Memory pools' names, by kind and device ("CUDA device memory, device 0"). Buffers
  // are read on the collector's thread and on CUPTI's own.
  std::mutex pool_names_mutex;
  std::unordered_map<uint64_t, std::string> pool_names;

  const char* PoolName(CUpti_ActivityMemoryKind kind, uint32_t device) {
    std::lock_guard lock(pool_names_mutex);
    auto [it, inserted] = pool_names.try_emplace(uint64_t(kind) << 32 | device);
    if (inserted)
      it->second = std::string("CUDA ") + MemoryKindName(kind) + " memory, device " + std::to_string(device);
    return it->second.c_str();
  }

  // An allocation or free, at its time on the CPU timeline (CUPTI's clock, moved by
  // the offset read when the buffer came).
  void OnMemory(const CUpti_ActivityMemory4& m, int64_t cupti_to_raw_ns) {
    const uint64_t time =
        gnomon_cpu_time_from_host_ns(GNOMON_CPU_TIME_MONOTONIC_RAW, int64_t(m.timestamp) + cupti_to_raw_ns);
    const void* address = reinterpret_cast<const void*>(uintptr_t(m.address));
    const char* pool = PoolName(m.memoryKind, m.deviceId);
    if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
      gnomon_alloc_at(address, size_t(m.bytes), pool, time);
      allocations.fetch_add(1, std::memory_order_relaxed);
    } else if (m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
      gnomon_free_at(address, pool, time);
      frees.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::mutex names_mutex;
  std::unordered_map<const char*, std::string> demangled;  // by CUPTI's symbol pointer

  std::mutex thread_mutex;
  std::condition_variable wake;     // to the collector's thread
  std::condition_variable flushed;  // from it
  bool stopping = false;
  uint64_t flush_requests = 0;
  uint64_t flushes_done = 0;
  std::thread thread;

  const char* KernelName(const char* symbol) {
    if (symbol == nullptr) return "kernel";
    std::lock_guard lock(names_mutex);
    auto [it, inserted] = demangled.try_emplace(symbol);
    if (inserted) {
      int status = 0;
      char* text = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
      it->second = status == 0 && text ? text : symbol;
      std::free(text);
    }
    return it->second.c_str();
  }

  void OnCallback(CUpti_CallbackId id, const CUpti_CallbackData* data) {
    if (data->callbackSite == CUPTI_API_EXIT) {
      timeline.OnLaunchEnd(data->correlationId);
      return;
    }
    Launch launch;
    if (!DescribeLaunch(id, data->functionParams, launch)) return;
    CUcontext context = data->context;
    if (context == nullptr) cuCtxGetCurrent(&context);
    uint32_t device = 0, stream = 0;
    if (context != nullptr) cuptiGetDeviceId(context, &device);
    cuptiGetStreamIdEx(nullptr, CUstream(launch.stream), launch.per_thread_stream ? 1 : 0, &stream);
    const char* name = launch.name ? launch.name : KernelName(data->symbolName);
    timeline.OnLaunchBegin(data->correlationId, device, stream, name, data->functionName);
  }

  void OnBuffer(uint8_t* buffer, size_t valid_bytes) {
    const BracketRead now = ReadCuptiClock();
    const int64_t cupti_to_raw_ns = (now.cpu_before_ns + now.cpu_after_ns) / 2 - int64_t(now.gpu_ns);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      ActivityRecord r;
      switch (record->kind) {
        case kMemoryActivity:
          OnMemory(*reinterpret_cast<const CUpti_ActivityMemory4*>(record), cupti_to_raw_ns);
          continue;
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          r = {ActivityKind::kKernel, k->correlationId, k->deviceId, k->streamId, k->start, k->end};
          kernels.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          r = {ActivityKind::kMemcpy, m->correlationId, m->deviceId, m->streamId, m->start, m->end};
          memcpys.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          r = {ActivityKind::kMemset, m->correlationId, m->deviceId, m->streamId, m->start, m->end};
          memsets.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        default:
          continue;
      }
      timeline.OnActivity(r);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      timeline.CountDropped(dropped);
    }
  }

  // The collector's thread: every flush_period (or when Flush() asks) hands CUPTI's
  // finished buffers over; calibrates every calibration_period; at the end, stops the
  // activity kinds and forces out what CUPTI still holds. Every flush happens here, so
  // no application thread runs the buffer callback.
  void Run() {
    gnomon::client::NameLibraryThread("CUDA collector");
    t_is_collector_thread = true;
    auto next_calibration = std::chrono::steady_clock::now() + options.calibration_period;
    std::unique_lock lock(thread_mutex);
    for (;;) {
      wake.wait_for(lock, options.flush_period,
                    [this] { return stopping || flush_requests != flushes_done; });
      const uint64_t requests = flush_requests;
      const bool asked = requests != flushes_done;  // someone waits in Flush()
      const bool last = stopping;
      lock.unlock();
      if (last) {
        for (CUpti_ActivityKind kind : kTracedActivities) cuptiActivityDisable(kind);
        if (options.memory) cuptiActivityDisable(kMemoryActivity);
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        timeline.Calibrate();
      } else {
        cuptiActivityFlushAll(0);
        // Also after a flush someone asked for: the records it handed over then lie
        // between two calibrations instead of after the last.
        if (asked || std::chrono::steady_clock::now() >= next_calibration) {
          timeline.Calibrate();
          if (!asked) next_calibration += options.calibration_period;
        }
      }
      lock.lock();
      flushes_done = requests;
      flushed.notify_all();
      if (last) return;
    }
  }

  void Flush() {
    std::unique_lock lock(thread_mutex);
    const uint64_t ticket = ++flush_requests;
    wake.notify_all();
    flushed.wait(lock, [&] { return flushes_done >= ticket || stopping; });
  }
};

namespace {

// CUPTI's buffer callbacks carry no user pointer: the one collector is found here.
std::atomic<Collector::State*> g_state{nullptr};

void CUPTIAPI OnCallback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  static_cast<Collector::State*>(user)->OnCallback(id, static_cast<const CUpti_CallbackData*>(data));
}

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  Collector::State* state = g_state.load(std::memory_order_acquire);
  *buffer = state ? state->pool.Acquire() : nullptr;
  *size = *buffer ? state->pool.buffer_bytes() : 0;
  if (state && *buffer == nullptr) state->timeline.CountRefusedBuffer();
}

void CUPTIAPI OnBufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  Collector::State* state = g_state.load(std::memory_order_acquire);
  if (state == nullptr) {
    std::free(buffer);  // cannot happen: the collector outlives its last flush
    return;
  }
  thread_local bool named = false;
  if (!named && !t_is_collector_thread) {
    gnomon::client::NameLibraryThread("CUPTI buffers");  // CUPTI's own thread
  }
  named = true;
  if (valid_bytes > 0) state->OnBuffer(buffer, valid_bytes);
  state->pool.Release(buffer);
}

}  // namespace

std::unique_ptr<Collector> Collector::Start(const CollectorOptions& options, std::string* error) {
  auto fail = [&](std::string why) -> std::unique_ptr<Collector> {
    if (error) *error = std::move(why);
    return nullptr;
  };
  auto state = std::make_unique<State>(options);
  State* expected = nullptr;
  if (!g_state.compare_exchange_strong(expected, state.get()))
    return fail("a CUDA collector is already running");
  CUptiResult result = cuptiSubscribe(&state->subscriber, OnCallback, state.get());
  if (result != CUPTI_SUCCESS) {
    g_state.store(nullptr);
    return fail("cuptiSubscribe: " + ResultString(result) + " (is another CUDA profiler attached?)");
  }
  for (CUpti_CallbackId id : kTracedCalls)
    cuptiEnableCallback(1, state->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  result = cuptiActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted);
  for (CUpti_ActivityKind kind : kTracedActivities) {
    if (result == CUPTI_SUCCESS) result = cuptiActivityEnable(kind);
  }
  if (result == CUPTI_SUCCESS && options.memory) {
    if (const CUptiResult memory = cuptiActivityEnable(kMemoryActivity); memory != CUPTI_SUCCESS) {
      // Zones without memory: said, not fatal.
      const std::string text = "gnomon: no CUDA memory pools: CUPTI memory records: " + ResultString(memory);
      std::fprintf(stderr, "%s\n", text.c_str());
      gnomon_message(text.c_str(), text.size(), GNOMON_WARNING);
    }
  }
  if (result != CUPTI_SUCCESS) {
    for (CUpti_ActivityKind kind : kTracedActivities) cuptiActivityDisable(kind);
    if (options.memory) cuptiActivityDisable(kMemoryActivity);
    cuptiUnsubscribe(state->subscriber);
    g_state.store(nullptr);
    return fail("CUPTI activity tracing: " + ResultString(result));
  }
  State* raw = state.get();
  raw->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<Collector>(new Collector(std::move(state)));
}

Collector::Collector(std::unique_ptr<State> state) : state_(std::move(state)) {}

Collector::~Collector() {
  {
    std::lock_guard lock(state_->thread_mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  state_->thread.join();  // it forced out the last records
  cuptiUnsubscribe(state_->subscriber);
  g_state.store(nullptr, std::memory_order_release);
}

void Collector::Flush() { state_->Flush(); }

CollectorStats Collector::stats() const {
  const TimelineStats t = state_->timeline.stats();
  CollectorStats s;
  s.launches = t.launches;
  s.kernels = state_->kernels.load(std::memory_order_relaxed);
  s.memcpys = state_->memcpys.load(std::memory_order_relaxed);
  s.memsets = state_->memsets.load(std::memory_order_relaxed);
  s.memory_allocations = state_->allocations.load(std::memory_order_relaxed);
  s.memory_frees = state_->frees.load(std::memory_order_relaxed);
  s.records_linked = t.records_linked;
  s.records_unlinked = t.records_unlinked;
  s.records_invalid = t.records_invalid;
  s.records_dropped = t.records_dropped;
  s.buffers_refused = t.buffers_refused;
  s.calibrations = t.calibrations;
  s.last_uncertainty_ns = t.last_uncertainty_ns;
  s.lanes = t.lanes;
  return s;
}

}  // namespace gnomon::cuda
