// GL_INTEL_performance_query as a counter source: query types enumerated with
// glGetFirstPerfQueryIdINTEL / glGetNextPerfQueryIdINTEL, their counters' metadata
// from glGetPerfCounterInfoINTEL, instances from glCreatePerfQueryINTEL, and results
// from glGetPerfQueryDataINTEL in its three modes (do not flush, flush, wait). Where the
// driver does not list the extension the source says so and offers nothing.
#include <algorithm>
#include <map>

#include "gl_extensions.h"
#include "gnomon/gpu_counters.hpp"
#include "gnomon/opengl.hpp"

namespace gnomon::opengl {
namespace {

// Tokens of GL_INTEL_performance_query.
constexpr uint32_t kWait = 0x83FB;
constexpr uint32_t kFlush = 0x83FA;
constexpr uint32_t kDoNotFlush = 0x83F9;
constexpr uint32_t kCounterEvent = 0x94F0;
constexpr uint32_t kCounterDataUint32 = 0x94F8;
constexpr uint32_t kQueryNameLengthMax = 0x94FD;
constexpr uint32_t kCounterNameLengthMax = 0x94FE;
constexpr uint32_t kCounterDescLengthMax = 0x94FF;

class IntelPerformanceQuerySource final : public counters::Source {
 public:
  explicit IntelPerformanceQuerySource(GetProcAddress loader) {
    if (loader == nullptr) {
      reason_ = "no GL loader";
      return;
    }
    if (!HasGlExtension(loader, "GL_INTEL_performance_query")) {
      reason_ = "the GL driver does not offer GL_INTEL_performance_query (Intel GPUs only)";
      return;
    }
#define GNOMON_LOAD(member, name) member = reinterpret_cast<decltype(member)>(loader(name))
    GNOMON_LOAD(get_first_, "glGetFirstPerfQueryIdINTEL");
    GNOMON_LOAD(get_next_, "glGetNextPerfQueryIdINTEL");
    GNOMON_LOAD(get_query_info_, "glGetPerfQueryInfoINTEL");
    GNOMON_LOAD(get_counter_info_, "glGetPerfCounterInfoINTEL");
    GNOMON_LOAD(create_, "glCreatePerfQueryINTEL");
    GNOMON_LOAD(delete_, "glDeletePerfQueryINTEL");
    GNOMON_LOAD(begin_, "glBeginPerfQueryINTEL");
    GNOMON_LOAD(end_, "glEndPerfQueryINTEL");
    GNOMON_LOAD(get_data_, "glGetPerfQueryDataINTEL");
    GNOMON_LOAD(get_integerv_, "glGetIntegerv");
#undef GNOMON_LOAD
    if (!get_first_ || !get_next_ || !get_query_info_ || !get_counter_info_ || !create_ || !delete_ ||
        !begin_ || !end_ || !get_data_ || !get_integerv_) {
      reason_ = "the GL loader lacks GL_INTEL_performance_query functions";
      return;
    }
    Enumerate();
    if (types_.empty()) reason_ = "GL_INTEL_performance_query lists no query types";
  }
  ~IntelPerformanceQuerySource() override {
    for (auto& [id, instance] : instances_) delete_(instance.handle);
  }

  bool is_available() const override { return reason_.empty(); }
  const std::string& unavailable_reason() const override { return reason_; }
  const std::vector<counters::QueryType>& query_types() const override { return types_; }

  uint32_t Create(size_t type) override {
    if (!is_available() || type >= types_.size()) return 0;
    uint32_t handle = 0;
    create_(types_[type].id, &handle);
    if (handle == 0) return 0;  // out of instances
    instances_[next_id_] = Instance{handle, type, false, false};
    return next_id_++;
  }
  void Destroy(uint32_t id) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return;
    if (it->second.running) end_(it->second.handle);
    delete_(it->second.handle);
    instances_.erase(it);
  }
  bool DoBegin(uint32_t id, void*) override {
    auto it = instances_.find(id);
    if (it == instances_.end() || it->second.running) return false;
    begin_(it->second.handle);
    it->second.running = true;
    it->second.ended = false;
    return true;
  }
  void DoEnd(uint32_t id, void*) override {
    auto it = instances_.find(id);
    if (it == instances_.end() || !it->second.running) return;
    end_(it->second.handle);
    it->second.running = false;
    it->second.ended = true;
  }
  counters::FetchStatus Fetch(uint32_t id, counters::FetchMode mode, counters::Values& out) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return counters::FetchStatus::kFailed;
    if (!it->second.ended) return counters::FetchStatus::kNotReady;  // never read an unended instance
    const counters::QueryType& type = types_[it->second.type];
    buffer_.assign(type.data_size, 0);
    uint32_t written = 0;
    const uint32_t flags = mode == counters::FetchMode::kWait    ? kWait
                           : mode == counters::FetchMode::kFlush ? kFlush
                                                                 : kDoNotFlush;
    get_data_(it->second.handle, flags, int32_t(buffer_.size()), buffer_.data(), &written);
    if (written == 0) return counters::FetchStatus::kNotReady;
    if (!counters::DecodeValues(type, {buffer_.data(), std::min<size_t>(written, buffer_.size())}, out)) {
      return counters::FetchStatus::kFailed;
    }
    out.flags = 0;
    return counters::FetchStatus::kReady;
  }

 private:
  struct Instance {
    uint32_t handle = 0;
    size_t type = 0;
    bool running = false;
    bool ended = false;
  };

  void Enumerate() {
    int32_t query_name_max = 256, counter_name_max = 256, counter_desc_max = 1024;
    get_integerv_(kQueryNameLengthMax, &query_name_max);
    get_integerv_(kCounterNameLengthMax, &counter_name_max);
    get_integerv_(kCounterDescLengthMax, &counter_desc_max);
    std::string query_name(size_t(std::clamp(query_name_max, 1, 4096)), '\0');
    std::string counter_name(size_t(std::clamp(counter_name_max, 1, 4096)), '\0');
    std::string description(size_t(std::clamp(counter_desc_max, 1, 65536)), '\0');
    uint32_t id = 0;
    get_first_(&id);
    for (int guard = 0; id != 0 && guard < 4096; ++guard) {
      uint32_t data_size = 0, counter_count = 0, max_instances = 0, caps = 0;
      std::fill(query_name.begin(), query_name.end(), '\0');
      get_query_info_(id, uint32_t(query_name.size()), query_name.data(), &data_size, &counter_count,
                      &max_instances, &caps);
      counters::QueryType type;
      type.id = id;
      type.name = query_name.c_str();
      type.data_size = data_size;
      for (uint32_t counter = 1; counter <= counter_count && counter <= GNOMON_MAX_COUNTER_VALUES;
           ++counter) {
        uint32_t offset = 0, size = 0, type_enum = 0, data_type_enum = 0;
        uint64_t raw_max = 0;
        std::fill(counter_name.begin(), counter_name.end(), '\0');
        std::fill(description.begin(), description.end(), '\0');
        get_counter_info_(id, counter, uint32_t(counter_name.size()), counter_name.data(),
                          uint32_t(description.size()), description.data(), &offset, &size, &type_enum,
                          &data_type_enum, &raw_max);
        counters::Counter c;
        c.name = counter_name.c_str();
        c.description = description.c_str();
        c.type = type_enum >= kCounterEvent && type_enum <= kCounterEvent + 5
                     ? gnomon_counter_type(type_enum - kCounterEvent)
                     : GNOMON_COUNTER_RAW;
        c.data_type = data_type_enum >= kCounterDataUint32 && data_type_enum <= kCounterDataUint32 + 4
                          ? gnomon_counter_data_type(data_type_enum - kCounterDataUint32)
                          : GNOMON_COUNTER_UINT64;
        c.offset = offset;
        c.size = size;
        c.raw_max = raw_max;
        type.counters.push_back(std::move(c));
      }
      if (!type.counters.empty()) types_.push_back(std::move(type));
      uint32_t next = 0;
      get_next_(id, &next);
      id = next;
    }
  }

  std::string reason_;
  std::vector<counters::QueryType> types_;
  std::map<uint32_t, Instance> instances_;
  std::vector<uint8_t> buffer_;
  uint32_t next_id_ = 1;
  void (*get_first_)(uint32_t*) = nullptr;
  void (*get_next_)(uint32_t, uint32_t*) = nullptr;
  void (*get_query_info_)(uint32_t, uint32_t, char*, uint32_t*, uint32_t*, uint32_t*, uint32_t*) = nullptr;
  void (*get_counter_info_)(uint32_t, uint32_t, uint32_t, char*, uint32_t, char*, uint32_t*, uint32_t*,
                            uint32_t*, uint32_t*, uint64_t*) = nullptr;
  void (*create_)(uint32_t, uint32_t*) = nullptr;
  void (*delete_)(uint32_t) = nullptr;
  void (*begin_)(uint32_t) = nullptr;
  void (*end_)(uint32_t) = nullptr;
  void (*get_data_)(uint32_t, uint32_t, int32_t, void*, uint32_t*) = nullptr;
  void (*get_integerv_)(uint32_t, int32_t*) = nullptr;
};

}  // namespace

std::unique_ptr<counters::Source> CreateIntelPerformanceQuerySource(GetProcAddress loader) {
  return std::make_unique<IntelPerformanceQuerySource>(loader);
}

}  // namespace gnomon::opengl
