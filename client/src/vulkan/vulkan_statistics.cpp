#include "vulkan_statistics.h"

namespace gnomon::vulkan {
namespace {

// Pipeline statistics in the order Vulkan returns them (bit order).
struct StatisticName {
  VkQueryPipelineStatisticFlagBits bit;
  const char* name;
  const char* description;
};
constexpr StatisticName kStatistics[] = {
    {VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_VERTICES_BIT, "input assembly vertices",
     "vertices read by input assembly"},
    {VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_PRIMITIVES_BIT, "input assembly primitives",
     "primitives read by input assembly"},
    {VK_QUERY_PIPELINE_STATISTIC_VERTEX_SHADER_INVOCATIONS_BIT, "vertex shader invocations", ""},
    {VK_QUERY_PIPELINE_STATISTIC_GEOMETRY_SHADER_INVOCATIONS_BIT, "geometry shader invocations", ""},
    {VK_QUERY_PIPELINE_STATISTIC_GEOMETRY_SHADER_PRIMITIVES_BIT, "geometry shader primitives", ""},
    {VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT, "clipping invocations",
     "primitives that reached clipping"},
    {VK_QUERY_PIPELINE_STATISTIC_CLIPPING_PRIMITIVES_BIT, "clipping primitives",
     "primitives out of clipping"},
    {VK_QUERY_PIPELINE_STATISTIC_FRAGMENT_SHADER_INVOCATIONS_BIT, "fragment shader invocations", ""},
    {VK_QUERY_PIPELINE_STATISTIC_TESSELLATION_CONTROL_SHADER_PATCHES_BIT, "tessellation control patches", ""},
    {VK_QUERY_PIPELINE_STATISTIC_TESSELLATION_EVALUATION_SHADER_INVOCATIONS_BIT,
     "tessellation evaluation invocations", ""},
    {VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT, "compute shader invocations", ""},
};

}  // namespace

VkQueryPipelineStatisticFlags KnownStatistics(VkQueryPipelineStatisticFlags flags) {
  VkQueryPipelineStatisticFlags known = 0;
  for (const StatisticName& s : kStatistics) known |= flags & s.bit;
  return known;
}

counters::QueryType PipelineStatisticsType(VkQueryPipelineStatisticFlags flags) {
  counters::QueryType type;
  type.id = uint32_t(KnownStatistics(flags));
  type.name = "pipeline statistics";
  for (const StatisticName& s : kStatistics) {
    if (!(flags & s.bit)) continue;
    type.counters.push_back({s.name, s.description, GNOMON_COUNTER_EVENT, GNOMON_COUNTER_UINT64,
                             uint32_t(type.counters.size() * sizeof(uint64_t)), sizeof(uint64_t), 0});
  }
  type.data_size = uint32_t(type.counters.size() * sizeof(uint64_t));
  return type;
}

}  // namespace gnomon::vulkan
