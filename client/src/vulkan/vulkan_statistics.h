// Vulkan's pipeline statistics as a counter query type, shared by the Vulkan context's
// ring and the stand-alone source.
#pragma once

#include <vulkan/vulkan.h>

#include "gnomon/gpu_counters.hpp"

namespace gnomon::vulkan {

// The statistics of `flags` that Vulkan defines, as Vulkan returns them (bit order).
VkQueryPipelineStatisticFlags KnownStatistics(VkQueryPipelineStatisticFlags flags);
// "pipeline statistics": one uint64 event counter per statistic of `flags`.
counters::QueryType PipelineStatisticsType(VkQueryPipelineStatisticFlags flags);

}  // namespace gnomon::vulkan
