// The GL_INTEL_performance_query source against a software stand-in for an Intel
// driver (no Intel GPU runs these tests): enumeration, metadata, instances and the
// three fetch modes, exactly as the extension specifies them. On a real driver without
// the extension the source is unavailable (opengl/opengl_context_test.cpp checks that on
// Mesa, in a real GL context; here a stand-in driver that does not list it).
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gnomon/gpu_counters.hpp"
#include "gnomon/opengl.hpp"

namespace {

// The stand-in driver's state.
struct FakeIntelDriver {
  struct Instance {
    uint32_t query = 0;
    bool running = false, ended = false, submitted = false;
  };
  std::map<uint32_t, Instance> instances;
  uint32_t next_handle = 100;
  bool gpu_finishes_submitted = false;  // the "GPU" has run everything submitted
  std::vector<uint32_t> fetch_flags;
} g_driver;

void GetIntegerv(uint32_t name, int32_t* value) {
  switch (name) {
    case 0x821D:
      *value = 2;
      break;  // GL_NUM_EXTENSIONS
    case 0x94FD:
      *value = 64;
      break;  // query name length max
    case 0x94FE:
      *value = 64;
      break;  // counter name length max
    case 0x94FF:
      *value = 256;
      break;  // description length max
    default:
      *value = 0;
  }
}
const uint8_t* GetStringi(uint32_t, uint32_t index) {
  static const char* kExtensions[] = {"GL_ARB_something", "GL_INTEL_performance_query"};
  return reinterpret_cast<const uint8_t*>(index < 2 ? kExtensions[index] : nullptr);
}
void GetFirst(uint32_t* id) { *id = 3; }
void GetNext(uint32_t id, uint32_t* next) { *next = id == 3 ? 7 : 0; }
void CopyName(const char* text, uint32_t length, char* out) {
  std::strncpy(out, text, length);
  if (length > 0) out[length - 1] = '\0';
}
void GetQueryInfo(uint32_t id, uint32_t name_length, char* name, uint32_t* data_size, uint32_t* counters,
                  uint32_t* instances, uint32_t* caps) {
  CopyName(id == 3 ? "Render Basic" : "Memory", name_length, name);
  *data_size = id == 3 ? 24 : 8;
  *counters = id == 3 ? 4 : 1;
  *instances = 2;
  *caps = 1;  // global context
}
void GetCounterInfo(uint32_t query, uint32_t counter, uint32_t name_length, char* name, uint32_t desc_length,
                    char* desc, uint32_t* offset, uint32_t* size, uint32_t* type, uint32_t* data_type,
                    uint64_t* raw_max) {
  struct Def {
    const char* name;
    uint32_t offset, size, type, data_type;
    uint64_t raw_max;
  };
  static const Def kRender[] = {{"GPU Core Clocks", 0, 8, 0x94F0, 0x94F9, 1'000'000'000},
                                {"EU Busy", 8, 4, 0x94F1, 0x94F8, 0},
                                {"GPU Temperature", 12, 4, 0x94F4, 0x94FA, 0},
                                {"Bytes Read", 16, 8, 0x94F3, 0x94F9, 0}};
  static const Def kMemory[] = {{"Memory Ratio", 0, 8, 0x94F4, 0x94FB, 0}};
  const Def& d = query == 3 ? kRender[counter - 1] : kMemory[counter - 1];
  CopyName(d.name, name_length, name);
  CopyName((std::string("about ") + d.name).c_str(), desc_length, desc);
  *offset = d.offset;
  *size = d.size;
  *type = d.type;
  *data_type = d.data_type;
  *raw_max = d.raw_max;
}
void Create(uint32_t query, uint32_t* handle) {
  size_t of_query = 0;
  for (const auto& [h, i] : g_driver.instances) of_query += i.query == query;
  if (of_query >= 2) {
    *handle = 0;  // past maxInstances
    return;
  }
  *handle = g_driver.next_handle++;
  g_driver.instances[*handle].query = query;
}
void Delete(uint32_t handle) { g_driver.instances.erase(handle); }
void Begin(uint32_t handle) {
  g_driver.instances[handle] = {g_driver.instances[handle].query, true, false, false};
}
void End(uint32_t handle) {
  auto& i = g_driver.instances[handle];
  i.running = false;
  i.ended = true;
}
void GetData(uint32_t handle, uint32_t flags, int32_t size, void* data, uint32_t* written) {
  g_driver.fetch_flags.push_back(flags);
  auto& i = g_driver.instances[handle];
  *written = 0;
  if (flags == 0x83FA) i.submitted = true;                                    // FLUSH
  if (flags == 0x83FB) i.submitted = g_driver.gpu_finishes_submitted = true;  // WAIT
  if (!i.ended || !i.submitted || !g_driver.gpu_finishes_submitted) return;
  uint8_t bytes[24] = {};
  if (i.query == 3) {
    const uint64_t clocks = 4000, read = 1 << 20;
    const uint32_t busy = 1000;
    const float temperature = 61.5f;
    std::memcpy(bytes, &clocks, 8);
    std::memcpy(bytes + 8, &busy, 4);
    std::memcpy(bytes + 12, &temperature, 4);
    std::memcpy(bytes + 16, &read, 8);
  } else {
    const double ratio = 0.25;
    std::memcpy(bytes, &ratio, 8);
  }
  const uint32_t n = std::min<uint32_t>(uint32_t(size), i.query == 3 ? 24 : 8);
  std::memcpy(data, bytes, n);
  *written = n;
}

void* FakeLoader(const char* name) {
  const std::map<std::string, void*> functions = {
      {"glGetIntegerv", reinterpret_cast<void*>(&GetIntegerv)},
      {"glGetStringi", reinterpret_cast<void*>(&GetStringi)},
      {"glGetFirstPerfQueryIdINTEL", reinterpret_cast<void*>(&GetFirst)},
      {"glGetNextPerfQueryIdINTEL", reinterpret_cast<void*>(&GetNext)},
      {"glGetPerfQueryInfoINTEL", reinterpret_cast<void*>(&GetQueryInfo)},
      {"glGetPerfCounterInfoINTEL", reinterpret_cast<void*>(&GetCounterInfo)},
      {"glCreatePerfQueryINTEL", reinterpret_cast<void*>(&Create)},
      {"glDeletePerfQueryINTEL", reinterpret_cast<void*>(&Delete)},
      {"glBeginPerfQueryINTEL", reinterpret_cast<void*>(&Begin)},
      {"glEndPerfQueryINTEL", reinterpret_cast<void*>(&End)},
      {"glGetPerfQueryDataINTEL", reinterpret_cast<void*>(&GetData)},
  };
  auto it = functions.find(name);
  return it == functions.end() ? nullptr : it->second;
}

void* LoaderWithoutIntel(const char* name) {
  return std::string(name).find("INTEL") != std::string::npos ? nullptr : FakeLoader(name);
}

// A driver with the functions that does not list the extension.
const uint8_t* GetStringiWithoutIntel(uint32_t, uint32_t index) {
  static const char* kExtensions[] = {"GL_ARB_something", "GL_ARB_something_else"};
  return reinterpret_cast<const uint8_t*>(index < 2 ? kExtensions[index] : nullptr);
}
void* LoaderNotListingIntel(const char* name) {
  return std::string(name) == "glGetStringi" ? reinterpret_cast<void*>(&GetStringiWithoutIntel)
                                             : FakeLoader(name);
}

}  // namespace

TEST_CASE("Intel performance queries: query types and counters enumerated with their metadata") {
  g_driver = {};
  auto source = gnomon::opengl::CreateIntelPerformanceQuerySource(&FakeLoader);
  REQUIRE_MESSAGE(source->is_available(), source->unavailable_reason());
  const auto& types = source->query_types();
  REQUIRE(types.size() == 2);
  CHECK(types[0].id == 3);
  CHECK(types[0].name == "Render Basic");
  CHECK(types[0].data_size == 24);
  REQUIRE(types[0].counters.size() == 4);
  const auto& clocks = types[0].counters[0];
  CHECK(clocks.name == "GPU Core Clocks");
  CHECK(clocks.description == "about GPU Core Clocks");
  CHECK(clocks.type == GNOMON_COUNTER_EVENT);
  CHECK(clocks.data_type == GNOMON_COUNTER_UINT64);
  CHECK(clocks.raw_max == 1'000'000'000);
  CHECK(types[0].counters[1].type == GNOMON_COUNTER_DURATION_NORM);
  CHECK(types[0].counters[1].data_type == GNOMON_COUNTER_UINT32);
  CHECK(types[0].counters[1].offset == 8);
  CHECK(types[0].counters[2].data_type == GNOMON_COUNTER_FLOAT);
  CHECK(types[0].counters[3].type == GNOMON_COUNTER_THROUGHPUT);
  CHECK(types[1].name == "Memory");
  CHECK(types[1].counters[0].data_type == GNOMON_COUNTER_DOUBLE);

  auto missing = gnomon::opengl::CreateIntelPerformanceQuerySource(&LoaderWithoutIntel);
  CHECK_FALSE(missing->is_available());
  CHECK(missing->unavailable_reason().find("functions") != std::string::npos);
  CHECK(missing->query_types().empty());
  CHECK(missing->Create(0) == 0);
}

TEST_CASE("Intel performance queries: instances, and the do-not-flush, flush and wait fetch modes") {
  g_driver = {};
  auto source = gnomon::opengl::CreateIntelPerformanceQuerySource(&FakeLoader);
  REQUIRE(source->is_available());
  const uint32_t a = source->Create(0);
  const uint32_t b = source->Create(0);
  REQUIRE(a != 0);
  REQUIRE(b != 0);
  CHECK(source->Create(0) == 0);  // the driver's instance limit
  CHECK(source->Create(9) == 0);  // no such type

  gnomon::counters::Values values;
  using gnomon::counters::FetchMode;
  using gnomon::counters::FetchStatus;
  REQUIRE(source->Begin(a));
  CHECK(source->Fetch(a, FetchMode::kWait, values) == FetchStatus::kNotReady);  // not ended: never read
  CHECK(g_driver.fetch_flags.empty());
  source->End(a);
  CHECK(source->Fetch(a, FetchMode::kDoNotFlush, values) == FetchStatus::kNotReady);  // nothing submitted
  CHECK(source->Fetch(a, FetchMode::kFlush, values) == FetchStatus::kNotReady);       // submitted, not done
  g_driver.gpu_finishes_submitted = true;
  REQUIRE(source->Fetch(a, FetchMode::kDoNotFlush, values) == FetchStatus::kReady);
  CHECK(g_driver.fetch_flags == std::vector<uint32_t>{0x83F9, 0x83FA, 0x83F9});
  REQUIRE(values.values.size() == 4);
  CHECK(values.values[0] == 4000);
  CHECK(values.values[1] == 1000);
  CHECK(std::bit_cast<double>(values.values[2]) == 61.5);
  CHECK(values.values[3] == (1u << 20));

  g_driver.gpu_finishes_submitted = false;
  REQUIRE(source->Begin(b));
  source->End(b);
  REQUIRE(source->Fetch(b, FetchMode::kWait, values) == FetchStatus::kReady);  // waits: values now
  CHECK(g_driver.fetch_flags.back() == 0x83FB);
  source->Destroy(a);
  CHECK(g_driver.instances.size() == 1);
  CHECK(source->Fetch(a, FetchMode::kWait, values) == FetchStatus::kFailed);
}

TEST_CASE(
    "Intel performance queries: a driver that does not list the extension, or no loader, offers nothing") {
  g_driver = {};
  auto unlisted = gnomon::opengl::CreateIntelPerformanceQuerySource(&LoaderNotListingIntel);
  CHECK_FALSE(unlisted->is_available());
  CHECK(unlisted->unavailable_reason().find("does not offer GL_INTEL_performance_query") !=
        std::string::npos);
  CHECK(unlisted->query_types().empty());
  CHECK(unlisted->Create(0) == 0);
  CHECK(g_driver.instances.empty());  // nothing was asked of the driver

  auto none = gnomon::opengl::CreateIntelPerformanceQuerySource(gnomon::opengl::GetProcAddress{nullptr});
  CHECK_FALSE(none->is_available());
  CHECK(none->unavailable_reason() == "no GL loader");
}
