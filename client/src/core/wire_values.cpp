// The C API (gnomon.h) repeats wire values as C enums and macros, since a C header
// cannot include the protocol's C++ headers. Each is checked here against the protocol,
// its one home, so that neither can change alone.
#include "gnomon/gnomon.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/protocol/settings.h"

namespace gnomon::protocol {

static_assert(GNOMON_DEFAULT_PORT == kDefaultPort);
static_assert(GNOMON_NO_COLOR == kNoColor);
static_assert(GNOMON_MAX_INLINE_STRING <= kMaxStringBytes);
static_assert(GNOMON_MAX_COUNTER_VALUES <= kMaxCounters);

static_assert(GNOMON_TRACE == int(Severity::kTrace));
static_assert(GNOMON_DEBUG == int(Severity::kDebug));
static_assert(GNOMON_INFO == int(Severity::kInfo));
static_assert(GNOMON_WARNING == int(Severity::kWarning));
static_assert(GNOMON_ERROR == int(Severity::kError));
static_assert(GNOMON_FATAL == int(Severity::kFatal));

static_assert(GNOMON_GPU_API_UNKNOWN == int(GpuApi::kUnknown));
static_assert(GNOMON_GPU_API_VULKAN == int(GpuApi::kVulkan));
static_assert(GNOMON_GPU_API_OPENGL == int(GpuApi::kOpenGL));
static_assert(GNOMON_GPU_API_CUDA == int(GpuApi::kCuda));

static_assert(GNOMON_CPU_TIME_TICKS == int(CpuTimeDomain::kTicks));
static_assert(GNOMON_CPU_TIME_MONOTONIC_RAW == int(CpuTimeDomain::kMonotonicRaw));
static_assert(GNOMON_CPU_TIME_MONOTONIC == int(CpuTimeDomain::kMonotonic));

static_assert(GNOMON_GPU_CONTEXT_CALIBRATED == kGpuContextCalibrated);
static_assert(GNOMON_GPU_CONTEXT_FALLBACK_CALIBRATION == kGpuContextFallbackCalibration);

static_assert(GNOMON_COUNTER_EVENT == int(CounterType::kEvent));
static_assert(GNOMON_COUNTER_DURATION_NORM == int(CounterType::kDurationNorm));
static_assert(GNOMON_COUNTER_DURATION_RAW == int(CounterType::kDurationRaw));
static_assert(GNOMON_COUNTER_THROUGHPUT == int(CounterType::kThroughput));
static_assert(GNOMON_COUNTER_RAW == int(CounterType::kRaw));
static_assert(GNOMON_COUNTER_TIMESTAMP == int(CounterType::kTimestamp));

static_assert(GNOMON_COUNTER_UINT32 == int(CounterDataType::kUint32));
static_assert(GNOMON_COUNTER_UINT64 == int(CounterDataType::kUint64));
static_assert(GNOMON_COUNTER_FLOAT == int(CounterDataType::kFloat));
static_assert(GNOMON_COUNTER_DOUBLE == int(CounterDataType::kDouble));
static_assert(GNOMON_COUNTER_BOOL32 == int(CounterDataType::kBool32));

static_assert(GNOMON_COUNTER_TARGET_GPU_ZONE == int(CounterTarget::kGpuZone));
static_assert(GNOMON_COUNTER_TARGET_FRAME == int(CounterTarget::kFrame));
static_assert(GNOMON_COUNTER_FREQUENCY_CHANGED == kCounterFrequencyChanged);
static_assert(GNOMON_COUNTER_SPLIT_OCCURRED == kCounterSplitOccurred);

}  // namespace gnomon::protocol
