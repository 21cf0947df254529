// Vulkan pipeline statistics as a counter source. Each instance owns a one-query pool and
// an event: End() records the query's end and then sets the event, so that Fetch() learns
// from vkGetEventStatus (which never blocks, on any driver) whether the GPU is done, and
// only then reads the query.
#include <chrono>
#include <map>
#include <thread>

#include "gnomon/gpu_counters.hpp"
#include "gnomon/vulkan.hpp"
#include "vulkan_statistics.h"

namespace gnomon::vulkan {
namespace {

class PipelineStatisticsSource final : public counters::Source {
 public:
  PipelineStatisticsSource(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, VkDevice device,
                           VkQueryPipelineStatisticFlags flags)
      : device_(device), flags_(KnownStatistics(flags)) {
    auto get_device_proc_addr =
        gipa ? reinterpret_cast<PFN_vkGetDeviceProcAddr>(gipa(instance, "vkGetDeviceProcAddr")) : nullptr;
    if (get_device_proc_addr == nullptr || device == VK_NULL_HANDLE) {
      reason_ = "no Vulkan device";
      return;
    }
    if (flags_ == 0) {
      reason_ = "no pipeline statistics asked for";
      return;
    }
#define GNOMON_LOAD(member, name) \
  member = reinterpret_cast<decltype(member)>(get_device_proc_addr(device, name))
    GNOMON_LOAD(create_query_pool_, "vkCreateQueryPool");
    GNOMON_LOAD(destroy_query_pool_, "vkDestroyQueryPool");
    GNOMON_LOAD(get_query_pool_results_, "vkGetQueryPoolResults");
    GNOMON_LOAD(cmd_reset_query_pool_, "vkCmdResetQueryPool");
    GNOMON_LOAD(cmd_begin_query_, "vkCmdBeginQuery");
    GNOMON_LOAD(cmd_end_query_, "vkCmdEndQuery");
    GNOMON_LOAD(create_event_, "vkCreateEvent");
    GNOMON_LOAD(destroy_event_, "vkDestroyEvent");
    GNOMON_LOAD(cmd_set_event_, "vkCmdSetEvent");
    GNOMON_LOAD(reset_event_, "vkResetEvent");
    GNOMON_LOAD(get_event_status_, "vkGetEventStatus");
#undef GNOMON_LOAD
    if (!create_query_pool_ || !destroy_query_pool_ || !get_query_pool_results_ || !cmd_reset_query_pool_ ||
        !cmd_begin_query_ || !cmd_end_query_ || !create_event_ || !destroy_event_ || !cmd_set_event_ ||
        !reset_event_ || !get_event_status_) {
      reason_ = "the Vulkan device lacks query or event functions";
      return;
    }
    types_.push_back(PipelineStatisticsType(flags_));
  }
  ~PipelineStatisticsSource() override {
    for (auto& [id, instance] : instances_) Free(instance);
  }

  bool is_available() const override { return reason_.empty(); }
  const std::string& unavailable_reason() const override { return reason_; }
  const std::vector<counters::QueryType>& query_types() const override { return types_; }

  uint32_t Create(size_t type) override {
    if (!is_available() || type != 0) return 0;
    Instance instance;
    VkQueryPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0,
                                    VK_QUERY_TYPE_PIPELINE_STATISTICS,        1,       flags_};
    VkEventCreateInfo event_info{VK_STRUCTURE_TYPE_EVENT_CREATE_INFO, nullptr, 0};
    if (create_query_pool_(device_, &pool_info, nullptr, &instance.pool) != VK_SUCCESS ||
        create_event_(device_, &event_info, nullptr, &instance.done) != VK_SUCCESS) {
      Free(instance);
      return 0;
    }
    instances_[next_id_] = instance;
    return next_id_++;
  }
  void Destroy(uint32_t id) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return;
    Free(it->second);  // the GPU must be done with it, as with any Vulkan object
    instances_.erase(it);
  }
  counters::FetchStatus Fetch(uint32_t id, counters::FetchMode mode, counters::Values& out) override {
    auto it = instances_.find(id);
    if (it == instances_.end()) return counters::FetchStatus::kFailed;
    Instance& instance = it->second;
    if (instance.state != State::kEnded) return counters::FetchStatus::kNotReady;
    // Vulkan submits nothing on its own: "flush" is the program's vkQueueSubmit. A wait
    // polls the event, for at most ten seconds (work never submitted never completes).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (get_event_status_(device_, instance.done) != VK_EVENT_SET) {
      if (mode != counters::FetchMode::kWait || std::chrono::steady_clock::now() > deadline) {
        return counters::FetchStatus::kNotReady;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    out.values.assign(types_[0].counters.size(), 0);
    if (get_query_pool_results_(device_, instance.pool, 0, 1, out.values.size() * sizeof(uint64_t),
                                out.values.data(), out.values.size() * sizeof(uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS) {
      return counters::FetchStatus::kFailed;
    }
    out.flags = 0;
    instance.state = State::kRead;
    return counters::FetchStatus::kReady;
  }

 protected:
  bool DoBegin(uint32_t id, void* commands) override {
    auto it = instances_.find(id);
    auto cmd = static_cast<VkCommandBuffer>(commands);
    // An instance whose last measurement is still in flight cannot begin again: its event
    // may still be set by the GPU.
    if (it == instances_.end() || cmd == VK_NULL_HANDLE || it->second.state == State::kRunning ||
        it->second.state == State::kEnded || running_ != 0) {
      return false;
    }
    reset_event_(device_, it->second.done);
    cmd_reset_query_pool_(cmd, it->second.pool, 0, 1);
    cmd_begin_query_(cmd, it->second.pool, 0, 0);
    it->second.state = State::kRunning;
    running_ = id;
    return true;
  }
  void DoEnd(uint32_t id, void* commands) override {
    auto it = instances_.find(id);
    auto cmd = static_cast<VkCommandBuffer>(commands);
    if (it == instances_.end() || cmd == VK_NULL_HANDLE || it->second.state != State::kRunning) return;
    cmd_end_query_(cmd, it->second.pool, 0);
    cmd_set_event_(cmd, it->second.done, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    it->second.state = State::kEnded;
    running_ = 0;
  }

 private:
  enum class State { kIdle, kRunning, kEnded, kRead };
  struct Instance {
    VkQueryPool pool = VK_NULL_HANDLE;
    VkEvent done = VK_NULL_HANDLE;
    State state = State::kIdle;
  };
  void Free(Instance& instance) {
    if (instance.pool != VK_NULL_HANDLE) destroy_query_pool_(device_, instance.pool, nullptr);
    if (instance.done != VK_NULL_HANDLE) destroy_event_(device_, instance.done, nullptr);
  }

  VkDevice device_;
  VkQueryPipelineStatisticFlags flags_;
  std::string reason_;
  std::vector<counters::QueryType> types_;
  std::map<uint32_t, Instance> instances_;
  uint32_t next_id_ = 1;
  uint32_t running_ = 0;
  PFN_vkCreateQueryPool create_query_pool_ = nullptr;
  PFN_vkDestroyQueryPool destroy_query_pool_ = nullptr;
  PFN_vkGetQueryPoolResults get_query_pool_results_ = nullptr;
  PFN_vkCmdResetQueryPool cmd_reset_query_pool_ = nullptr;
  PFN_vkCmdBeginQuery cmd_begin_query_ = nullptr;
  PFN_vkCmdEndQuery cmd_end_query_ = nullptr;
  PFN_vkCreateEvent create_event_ = nullptr;
  PFN_vkDestroyEvent destroy_event_ = nullptr;
  PFN_vkCmdSetEvent cmd_set_event_ = nullptr;
  PFN_vkResetEvent reset_event_ = nullptr;
  PFN_vkGetEventStatus get_event_status_ = nullptr;
};

}  // namespace

std::unique_ptr<counters::Source> CreatePipelineStatisticsSource(
    PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance, VkDevice device,
    VkQueryPipelineStatisticFlags flags) {
  return std::make_unique<PipelineStatisticsSource>(get_instance_proc_addr, instance, device, flags);
}

}  // namespace gnomon::vulkan
