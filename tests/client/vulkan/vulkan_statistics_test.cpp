// Vulkan's pipeline statistics as a counter query type (vulkan/vulkan_statistics.cpp),
// shared by the Vulkan context's ring and the stand-alone source: no device needed.
// (vulkan_tests does not see client/src: the private header by its path.)
#include "../../../client/src/vulkan/vulkan_statistics.h"

#include <doctest/doctest.h>

#include <bit>
#include <set>
#include <string>

using gnomon::vulkan::KnownStatistics;
using gnomon::vulkan::PipelineStatisticsType;

namespace {

// Every statistic Vulkan 1.0 defines, lowest bit to highest.
constexpr VkQueryPipelineStatisticFlags kVulkanStatistics =
    VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_VERTICES_BIT |
    VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_PRIMITIVES_BIT |
    VK_QUERY_PIPELINE_STATISTIC_VERTEX_SHADER_INVOCATIONS_BIT |
    VK_QUERY_PIPELINE_STATISTIC_GEOMETRY_SHADER_INVOCATIONS_BIT |
    VK_QUERY_PIPELINE_STATISTIC_GEOMETRY_SHADER_PRIMITIVES_BIT |
    VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT |
    VK_QUERY_PIPELINE_STATISTIC_CLIPPING_PRIMITIVES_BIT |
    VK_QUERY_PIPELINE_STATISTIC_FRAGMENT_SHADER_INVOCATIONS_BIT |
    VK_QUERY_PIPELINE_STATISTIC_TESSELLATION_CONTROL_SHADER_PATCHES_BIT |
    VK_QUERY_PIPELINE_STATISTIC_TESSELLATION_EVALUATION_SHADER_INVOCATIONS_BIT |
    VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT;

constexpr VkQueryPipelineStatisticFlags kUnknownBits = VkQueryPipelineStatisticFlags{1u << 30} | (1u << 29);

}  // namespace

TEST_CASE("only the statistics Vulkan defines are known, other bits are dropped") {
  CHECK(KnownStatistics(kVulkanStatistics) == kVulkanStatistics);
  CHECK(KnownStatistics(kVulkanStatistics | kUnknownBits) == kVulkanStatistics);
  CHECK(KnownStatistics(kUnknownBits) == 0);
  CHECK(KnownStatistics(VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT | kUnknownBits) ==
        VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT);
}

TEST_CASE("the query type has one uint64 event counter per statistic asked for, in Vulkan's bit order") {
  const auto all = PipelineStatisticsType(kVulkanStatistics | kUnknownBits);
  CHECK(all.name == "pipeline statistics");
  CHECK(all.id == kVulkanStatistics);
  REQUIRE(all.counters.size() == size_t(std::popcount(kVulkanStatistics)));
  CHECK(all.data_size == all.counters.size() * sizeof(uint64_t));
  std::set<std::string> names;
  for (size_t i = 0; i < all.counters.size(); ++i) {
    CAPTURE(i);
    const auto& counter = all.counters[i];
    CHECK(counter.offset == i * sizeof(uint64_t));  // Vulkan writes them back to back
    CHECK(counter.size == sizeof(uint64_t));
    CHECK(counter.type == GNOMON_COUNTER_EVENT);
    CHECK(counter.data_type == GNOMON_COUNTER_UINT64);
    CHECK_FALSE(counter.name.empty());
    names.insert(counter.name);
  }
  CHECK(names.size() == all.counters.size());  // each statistic its own name

  // A subset keeps the order of the bits, whatever order they are named in, and each
  // statistic the name it has in the full set.
  const auto two = PipelineStatisticsType(VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT |
                                          VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_VERTICES_BIT);
  REQUIRE(two.counters.size() == 2);
  CHECK(two.counters[0].name == all.counters.front().name);  // the lowest bit
  CHECK(two.counters[1].name == all.counters.back().name);   // the highest
  CHECK(two.counters[1].offset == sizeof(uint64_t));
  CHECK(two.data_size == 2 * sizeof(uint64_t));
  CHECK(two.id == (VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT |
                   VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_VERTICES_BIT));

  const auto none = PipelineStatisticsType(kUnknownBits);
  CHECK(none.counters.empty());
  CHECK(none.data_size == 0);
  CHECK(none.id == 0);
}
