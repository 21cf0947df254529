// GPU counter sources, one small interface for all of them, after the performance-query
// model of GL_INTEL_performance_query: a source lists query types (counter sets), each
// with its counters (name, description, type, data type, offset and size in the result
// structure, raw maximum); an instance of a query type is begun and ended around GPU
// work; its result is fetched without blocking (or with a flush, or waiting, when asked).
//
//   auto source = gnomon::opengl::CreatePipelineStatisticsSource(glfwGetProcAddress);
//   if (!source->is_available()) puts(source->unavailable_reason().c_str());
//   const uint32_t set = gnomon::counters::DefineSet(gpu_context, source->query_types()[0]);
//   uint32_t instance = source->Create(0);
//   source->Begin(instance); draw(); source->End(instance);   // Vulkan: Begin(instance, cmd)
//   ... later, once a frame:
//   gnomon::counters::Values values;
//   if (source->Fetch(instance, gnomon::counters::FetchMode::kDoNotFlush, values) == FetchStatus::kReady)
//     gnomon::counters::SendResult(gpu_context, set, GNOMON_COUNTER_TARGET_FRAME, frame, values);
//
// Sources: gnomon::opengl::CreatePipelineStatisticsSource and
// CreateIntelPerformanceQuerySource (opengl.hpp), gnomon::vulkan::CreatePipelineStatisticsSource
// (vulkan.hpp). APIs that record commands take the command buffer in Begin and End
// (`commands`: a VkCommandBuffer for Vulkan; GL ignores it). The OpenGL collector drives a
// source itself for zones opened with GNOMON_GL_ZONE_COUNTERS (opengl.hpp); the Vulkan
// collector measures pipeline statistics in its timestamp ring for GNOMON_VK_ZONE_COUNTERS
// (vulkan.hpp). Sources never invent values: an instance not ended, or whose work the GPU
// has not finished, fetches as kNotReady.
//
// Threads: a source is used where its API is (for GL, the thread whose context is current).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gnomon/gnomon.h"

namespace gnomon::counters {

struct Counter {
  std::string name;
  std::string description;
  gnomon_counter_type type = GNOMON_COUNTER_EVENT;
  gnomon_counter_data_type data_type = GNOMON_COUNTER_UINT64;
  uint32_t offset = 0;  // in the query type's result structure
  uint32_t size = 0;
  uint64_t raw_max = 0;
};

struct QueryType {
  uint32_t id = 0;  // the source's own id for it
  std::string name;
  uint32_t data_size = 0;  // bytes of one result structure
  std::vector<Counter> counters;
};

enum class FetchMode {
  kDoNotFlush,  // look, never submit, never wait
  kFlush,       // look, and submit pending work so that a later look may succeed
  kWait,        // block until the result is there (not for a frame loop)
};

enum class FetchStatus { kReady, kNotReady, kFailed };

// One instance's values, one per counter (as gnomon_counter_result takes them).
struct Values {
  std::vector<uint64_t> values;
  uint8_t flags = 0;  // GNOMON_COUNTER_FREQUENCY_CHANGED, GNOMON_COUNTER_SPLIT_OCCURRED
};

class Source {
 public:
  virtual ~Source() = default;
  virtual bool is_available() const = 0;
  // Why the source is unavailable ("" when it is available).
  virtual const std::string& unavailable_reason() const = 0;
  virtual const std::vector<QueryType>& query_types() const = 0;
  // A new instance of query_types()[type]; 0 when none can be made.
  virtual uint32_t Create(size_t type) = 0;
  virtual void Destroy(uint32_t instance) = 0;
  // Begins measuring (recording into `commands` where the API records commands); false
  // when the instance cannot begin (unknown, already running, another one running).
  bool Begin(uint32_t instance, void* commands = nullptr) { return DoBegin(instance, commands); }
  void End(uint32_t instance, void* commands = nullptr) { DoEnd(instance, commands); }
  // The result of the instance's last Begin/End; kNotReady while the GPU has not finished
  // it (and for an instance never ended).
  virtual FetchStatus Fetch(uint32_t instance, FetchMode mode, Values& out) = 0;

 protected:
  virtual bool DoBegin(uint32_t instance, void* commands) = 0;
  virtual void DoEnd(uint32_t instance, void* commands) = 0;
};

// Reads a result structure by the query type's layout: each counter's bytes at its
// offset, as its data type. False (and out untouched) when a counter lies outside `data`.
bool DecodeValues(const QueryType& type, std::span<const uint8_t> data, Values& out);

// Describes `type` to the server as a counter set of `gpu_context`; the set's id.
uint32_t DefineSet(uint32_t gpu_context, const QueryType& type);

// Sends one instance's values for a GPU zone (target_id: its begin query; send it
// before the zone's GPU times) or a frame (target_id: the frame's number).
void SendResult(uint32_t gpu_context, uint32_t set, uint8_t target, uint32_t target_id, const Values& values);

}  // namespace gnomon::counters
