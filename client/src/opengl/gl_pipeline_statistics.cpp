// ARB_pipeline_statistics_query as a counter source: one query type, eleven counters,
// an instance = one GL query object per statistic (GL allows one active query per
// target, so instances of this source do not nest).
#include <array>
#include <map>

#include "gl_extensions.h"
#include "gnomon/gpu_counters.hpp"
#include "gnomon/opengl.hpp"

namespace gnomon::opengl {
namespace {

constexpr uint32_t kGlQueryResult = 0x8866;
constexpr uint32_t kGlQueryResultAvailable = 0x8867;

struct Statistic {
  uint32_t target;
  const char* name;
  const char* description;
};
constexpr std::array<Statistic, 11> kStatistics = {{
    {0x82EE, "vertices submitted", "vertices given to draw calls"},
    {0x82EF, "primitives submitted", "primitives given to draw calls"},
    {0x82F0, "vertex shader invocations", ""},
    {0x82F1, "tessellation control patches", ""},
    {0x82F2, "tessellation evaluation invocations", ""},
    {0x887F, "geometry shader invocations", ""},
    {0x82F3, "geometry shader primitives emitted", ""},
    {0x82F4, "fragment shader invocations", ""},
    {0x82F5, "compute shader invocations", ""},
    {0x82F6, "clipping input primitives", ""},
    {0x82F7, "clipping output primitives", ""},
}};

class PipelineStatisticsSource final : public counters::Source {
 public:
  explicit PipelineStatisticsSource(GetProcAddress loader) {
    if (loader == nullptr) {
      reason_ = "no GL loader";
      return;
    }
    if (!HasGlExtension(loader, "GL_ARB_pipeline_statistics_query")) {
      reason_ = "the GL context lacks GL_ARB_pipeline_statistics_query";
      return;
    }
#define GNOMON_LOAD(member, name) member = reinterpret_cast<decltype(member)>(loader(name))
    GNOMON_LOAD(gen_queries_, "glGenQueries");
    GNOMON_LOAD(delete_queries_, "glDeleteQueries");
    GNOMON_LOAD(begin_query_, "glBeginQuery");
    GNOMON_LOAD(end_query_, "glEndQuery");
    GNOMON_LOAD(get_query_objectiv_, "glGetQueryObjectiv");
    GNOMON_LOAD(get_query_objectui64v_, "glGetQueryObjectui64v");
    GNOMON_LOAD(flush_, "glFlush");
#undef GNOMON_LOAD
    if (!gen_queries_ || !delete_queries_ || !begin_query_ || !end_query_ || !get_query_objectiv_ ||
        !get_query_objectui64v_ || !flush_) {
      reason_ = "the GL loader lacks query functions";
      return;
    }
    counters::QueryType type;
    type.id = 1;
    type.name = "pipeline statistics";
    type.data_size = uint32_t(kStatistics.size() * sizeof(uint64_t));
    for (size_t i = 0; i < kStatistics.size(); ++i) {
      type.counters.push_back({kStatistics[i].name, kStatistics[i].description, GNOMON_COUNTER_EVENT,
                               GNOMON_COUNTER_UINT64, uint32_t(i * sizeof(uint64_t)), sizeof(uint64_t), 0});
    }
    types_.push_back(std::move(type));
  }
  ~PipelineStatisticsSource() override {
    for (auto& [id, instance] : instances_)
      delete_queries_(int32_t(instance.queries.size()), instance.queries.data());
  }

  bool is_available() const override { return reason_.empty(); }
  const std::string& unavailable_reason() const override { return reason_; }
  const std::vector<counters::QueryType>& query_types() const override { return types_; }

  uint32_t Create(size_t type) override {
    if (!is_available() || type != 0) return 0;
    Instance& instance = instances_[next_id_];
    gen_queries_(int32_t(instance.queries.size()), instance.queries.data());
    return next_id_++;
  }
  void Destroy(uint32_t id) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return;
    if (it->second.running) End(id);
    delete_queries_(int32_t(it->second.queries.size()), it->second.queries.data());
    instances_.erase(it);
  }
  bool DoBegin(uint32_t id, void*) override {
    auto it = instances_.find(id);
    if (it == instances_.end() || it->second.running || running_ != 0) return false;
    for (size_t i = 0; i < kStatistics.size(); ++i)
      begin_query_(kStatistics[i].target, it->second.queries[i]);
    it->second.running = true;
    it->second.ended = false;
    running_ = id;
    return true;
  }
  void DoEnd(uint32_t id, void*) override {
    auto it = instances_.find(id);
    if (it == instances_.end() || !it->second.running) return;
    for (const Statistic& s : kStatistics) end_query_(s.target);
    it->second.running = false;
    it->second.ended = true;
    running_ = 0;
  }
  counters::FetchStatus Fetch(uint32_t id, counters::FetchMode mode, counters::Values& out) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return counters::FetchStatus::kFailed;
    if (!it->second.ended) return counters::FetchStatus::kNotReady;
    if (mode == counters::FetchMode::kFlush) flush_();
    if (mode != counters::FetchMode::kWait) {
      for (uint32_t query : it->second.queries) {
        int32_t available = 0;
        get_query_objectiv_(query, kGlQueryResultAvailable, &available);
        if (!available) return counters::FetchStatus::kNotReady;
      }
    }
    out.values.resize(kStatistics.size());
    for (size_t i = 0; i < kStatistics.size(); ++i) {
      get_query_objectui64v_(it->second.queries[i], kGlQueryResult, &out.values[i]);
    }
    out.flags = 0;
    return counters::FetchStatus::kReady;
  }

 private:
  struct Instance {
    std::array<uint32_t, kStatistics.size()> queries{};
    bool running = false;
    bool ended = false;
  };
  std::string reason_;
  std::vector<counters::QueryType> types_;
  std::map<uint32_t, Instance> instances_;
  uint32_t next_id_ = 1;
  uint32_t running_ = 0;
  void (*gen_queries_)(int32_t, uint32_t*) = nullptr;
  void (*delete_queries_)(int32_t, const uint32_t*) = nullptr;
  void (*begin_query_)(uint32_t, uint32_t) = nullptr;
  void (*end_query_)(uint32_t) = nullptr;
  void (*get_query_objectiv_)(uint32_t, uint32_t, int32_t*) = nullptr;
  void (*get_query_objectui64v_)(uint32_t, uint32_t, uint64_t*) = nullptr;
  void (*flush_)() = nullptr;
};

}  // namespace

std::unique_ptr<counters::Source> CreatePipelineStatisticsSource(GetProcAddress loader) {
  return std::make_unique<PipelineStatisticsSource>(loader);
}

}  // namespace gnomon::opengl
