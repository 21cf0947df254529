#include "gnomon/gpu_counters.hpp"

#include <bit>
#include <cstring>

namespace gnomon::counters {

bool DecodeValues(const QueryType& type, std::span<const uint8_t> data, Values& out) {
  std::vector<uint64_t> values;
  values.reserve(type.counters.size());
  for (const Counter& c : type.counters) {
    const size_t width = c.data_type == GNOMON_COUNTER_UINT64 || c.data_type == GNOMON_COUNTER_DOUBLE ? 8 : 4;
    if (size_t{c.offset} + width > data.size()) return false;
    const uint8_t* p = data.data() + c.offset;
    switch (c.data_type) {
      case GNOMON_COUNTER_UINT32:
      case GNOMON_COUNTER_BOOL32: {
        uint32_t v = 0;
        std::memcpy(&v, p, 4);
        values.push_back(v);
        break;
      }
      case GNOMON_COUNTER_UINT64: {
        uint64_t v = 0;
        std::memcpy(&v, p, 8);
        values.push_back(v);
        break;
      }
      case GNOMON_COUNTER_FLOAT: {
        float v = 0;
        std::memcpy(&v, p, 4);
        values.push_back(std::bit_cast<uint64_t>(double(v)));
        break;
      }
      case GNOMON_COUNTER_DOUBLE: {
        double v = 0;
        std::memcpy(&v, p, 8);
        values.push_back(std::bit_cast<uint64_t>(v));
        break;
      }
      default:
        return false;
    }
  }
  out.values = std::move(values);
  return true;
}

uint32_t DefineSet(uint32_t gpu_context, const QueryType& type) {
  std::vector<gnomon_counter_info> infos;
  infos.reserve(type.counters.size());
  for (const Counter& c : type.counters) {
    infos.push_back(
        {c.name.c_str(), c.description.c_str(), c.type, c.data_type, c.offset, c.size, c.raw_max});
  }
  if (infos.empty() || infos.size() > GNOMON_MAX_COUNTER_VALUES) return 0;
  return gnomon_counter_set_create(gpu_context, type.name.c_str(), infos.data(), uint16_t(infos.size()));
}

void SendResult(uint32_t gpu_context, uint32_t set, uint8_t target, uint32_t target_id,
                const Values& values) {
  if (values.values.empty() || values.values.size() > GNOMON_MAX_COUNTER_VALUES) return;
  gnomon_counter_result(gpu_context, set, target, target_id, values.flags, values.values.data(),
                        uint16_t(values.values.size()));
}

}  // namespace gnomon::counters
