#include "reference_decoder.h"

#include <cstring>

namespace gnomon::test {
namespace {

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool Has(size_t n) const { return size_ - pos_ >= n; }
  uint64_t Unsigned(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += bytes;
    return v;
  }
  std::string Text(size_t n) {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string N(uint64_t v) { return std::to_string(v); }
std::string S(int64_t v) { return std::to_string(v); }

}  // namespace

ReferenceDecodeResult ReferenceDecode(const uint8_t* data, size_t size) {
  ReferenceDecodeResult result;
  Cursor c(data, size);
  while (c.Has(1)) {
    const size_t start = c.pos();
    Cursor m = c;  // parse a copy; commit only whole messages
    const uint64_t type = m.Unsigned(1);
    std::string line;
    bool complete = true;
    auto need = [&](size_t n) {
      if (!m.Has(n)) complete = false;
      return complete;
    };
    switch (type) {
      case 1:
        if (need(4)) line = "ThreadContext thread=" + N(m.Unsigned(4));
        break;
      case 2:
        if (need(12)) {
          const uint64_t location = m.Unsigned(4);
          line = "ZoneBegin location=" + N(location) + " tick=" + N(m.Unsigned(8));
        }
        break;
      case 3:
        if (need(8)) line = "ZoneEnd tick=" + N(m.Unsigned(8));
        break;
      case 4:
      case 5:
        if (need(2)) {
          const uint64_t length = m.Unsigned(2);
          if (need(length)) line = std::string(type == 4 ? "ZoneName" : "ZoneText") + " '" + m.Text(length) + "'";
        }
        break;
      case 6:
        if (need(4)) line = "ZoneColor rgb=" + N(m.Unsigned(4));
        break;
      case 7:
        if (need(8)) line = "ZoneValue value=" + N(m.Unsigned(8));
        break;
      case 8:
      case 9:
      case 10:
        if (need(12)) {
          const uint64_t name = m.Unsigned(4);
          line = std::string(type == 8 ? "FrameMark" : type == 9 ? "FrameBegin" : "FrameEnd") + " name=" + N(name) +
                 " tick=" + N(m.Unsigned(8));
        }
        break;
      case 11:
        if (need(11)) {
          const uint64_t tick = m.Unsigned(8);
          const uint64_t severity = m.Unsigned(1);
          const uint64_t length = m.Unsigned(2);
          if (need(length)) line = "LogMessage tick=" + N(tick) + " severity=" + N(severity) + " '" + m.Text(length) + "'";
        }
        break;
      case 12:
        if (need(20)) {
          const uint64_t id = m.Unsigned(4);
          const uint64_t tick = m.Unsigned(8);
          const uint64_t bits = m.Unsigned(8);
          double value;
          std::memcpy(&value, &bits, 8);
          line = "PlotValue plot=" + N(id) + " tick=" + N(tick) + " value=" + std::to_string(value);
        }
        break;
      case 13:
        if (need(28)) {
          const uint64_t tick = m.Unsigned(8);
          const int64_t raw = int64_t(m.Unsigned(8));
          const int64_t mono = int64_t(m.Unsigned(8));
          line = "CpuCalibration tick=" + N(tick) + " raw=" + S(raw) + " mono=" + S(mono) +
                 " uncertainty=" + N(m.Unsigned(4));
        }
        break;
      case 14:
        if (need(7)) {
          const uint64_t id = m.Unsigned(4);
          const uint64_t kind = m.Unsigned(1);
          const uint64_t length = m.Unsigned(2);
          if (need(length)) line = "StringDef id=" + N(id) + " kind=" + N(kind) + " '" + m.Text(length) + "'";
        }
        break;
      case 15:
        if (need(18)) {
          const uint64_t id = m.Unsigned(4);
          const uint64_t line_number = m.Unsigned(4);
          const uint64_t color = m.Unsigned(4);
          const uint64_t name_length = m.Unsigned(2);
          const uint64_t function_length = m.Unsigned(2);
          const uint64_t file_length = m.Unsigned(2);
          if (need(name_length + function_length + file_length)) {
            const std::string name = m.Text(name_length);
            const std::string function = m.Text(function_length);
            const std::string file = m.Text(file_length);
            line = "SourceLocationDef id=" + N(id) + " line=" + N(line_number) + " color=" + N(color) + " '" + name +
                   "' '" + function + "' '" + file + "'";
          }
        }
        break;
      case 16:
        if (need(10)) {
          const uint64_t id = m.Unsigned(4);
          const uint64_t os_id = m.Unsigned(4);
          const uint64_t length = m.Unsigned(2);
          if (need(length)) line = "ThreadInfo thread=" + N(id) + " os=" + N(os_id) + " '" + m.Text(length) + "'";
        }
        break;
      case 17:
        if (need(31)) {
          const uint64_t pid = m.Unsigned(4);
          const uint64_t timer = m.Unsigned(1);
          const uint64_t rate = m.Unsigned(8);
          const int64_t unix_ns = int64_t(m.Unsigned(8));
          const uint64_t start_tick = m.Unsigned(8);
          const uint64_t length = m.Unsigned(2);
          if (need(length)) {
            line = "AppInfo pid=" + N(pid) + " timer=" + N(timer) + " rate=" + N(rate) + " unix=" + S(unix_ns) +
                   " start=" + N(start_tick) + " '" + m.Text(length) + "'";
          }
        }
        break;
      case 18:
        if (need(8)) line = "DroppedEvents total=" + N(m.Unsigned(8));
        break;
      case 19:
        if (need(8)) line = "EndOfStream tick=" + N(m.Unsigned(8));
        break;
      case 20:
        if (need(47)) {
          const uint64_t id = m.Unsigned(4), api = m.Unsigned(1), bits = m.Unsigned(1), flags = m.Unsigned(2);
          const uint64_t num = m.Unsigned(8), den = m.Unsigned(8), gpu = m.Unsigned(8), cpu = m.Unsigned(8);
          const uint64_t domain = m.Unsigned(1), uncertainty = m.Unsigned(4), length = m.Unsigned(2);
          if (need(length)) {
            line = "GpuContextDef id=" + N(id) + " api=" + N(api) + " bits=" + N(bits) + " flags=" + N(flags) +
                   " period=" + N(num) + "/" + N(den) + " gpu=" + N(gpu) + " cpu=" + N(cpu) + " domain=" + N(domain) +
                   " uncertainty=" + N(uncertainty) + " '" + m.Text(length) + "'";
          }
        }
        break;
      case 21:
        if (need(20)) {
          const uint64_t context = m.Unsigned(4), query = m.Unsigned(4), location = m.Unsigned(4);
          line = "GpuZoneBegin context=" + N(context) + " query=" + N(query) + " location=" + N(location) +
                 " tick=" + N(m.Unsigned(8));
        }
        break;
      case 22:
      case 23:
        if (need(16)) {
          const uint64_t context = m.Unsigned(4), query = m.Unsigned(4);
          line = std::string(type == 22 ? "GpuZoneEnd" : "GpuTime") + " context=" + N(context) + " query=" + N(query) +
                 " value=" + N(m.Unsigned(8));
        }
        break;
      case 24:
        if (need(33)) {
          const uint64_t context = m.Unsigned(4), gpu = m.Unsigned(8), cpu = m.Unsigned(8);
          const int64_t delta = int64_t(m.Unsigned(8));
          const uint64_t uncertainty = m.Unsigned(4);
          line = "GpuCalibration context=" + N(context) + " gpu=" + N(gpu) + " cpu=" + N(cpu) + " delta=" + S(delta) +
                 " uncertainty=" + N(uncertainty) + " domain=" + N(m.Unsigned(1));
        }
        break;
      case 25:
        if (need(25)) {
          const uint64_t context = m.Unsigned(4), gpu = m.Unsigned(8), cpu = m.Unsigned(8), uncertainty = m.Unsigned(4);
          line = "GpuResync context=" + N(context) + " gpu=" + N(gpu) + " cpu=" + N(cpu) + " uncertainty=" +
                 N(uncertainty) + " domain=" + N(m.Unsigned(1));
        }
        break;
      case 26:
        if (need(6)) {
          const uint64_t context = m.Unsigned(4), length = m.Unsigned(2);
          if (need(length)) line = "GpuContextName context=" + N(context) + " '" + m.Text(length) + "'";
        }
        break;
      case 27:
        if (need(12)) {
          const uint64_t context = m.Unsigned(4), set = m.Unsigned(4), count = m.Unsigned(2), length = m.Unsigned(2);
          if (need(length)) {
            line = "CounterSetDef context=" + N(context) + " set=" + N(set) + " count=" + N(count) + " '" +
                   m.Text(length) + "'";
          }
        }
        break;
      case 28:
        if (need(28)) {
          const uint64_t set = m.Unsigned(4), index = m.Unsigned(2), kind = m.Unsigned(1), data = m.Unsigned(1);
          const uint64_t offset = m.Unsigned(4), size = m.Unsigned(4), raw_max = m.Unsigned(8);
          const uint64_t name_length = m.Unsigned(2), description_length = m.Unsigned(2);
          if (need(name_length + description_length)) {
            const std::string name = m.Text(name_length);
            line = "CounterDef set=" + N(set) + " index=" + N(index) + " type=" + N(kind) + " data=" + N(data) +
                   " offset=" + N(offset) + " size=" + N(size) + " max=" + N(raw_max) + " '" + name + "' '" +
                   m.Text(description_length) + "'";
          }
        }
        break;
      case 29:
        if (need(16)) {
          const uint64_t context = m.Unsigned(4), set = m.Unsigned(4), target = m.Unsigned(1), flags = m.Unsigned(1);
          const uint64_t target_id = m.Unsigned(4), count = m.Unsigned(2);
          if (need(count * 8)) {
            line = "CounterResult context=" + N(context) + " set=" + N(set) + " target=" + N(target) +
                   " flags=" + N(flags) + " id=" + N(target_id) + " values=";
            for (uint64_t i = 0; i < count; ++i) line += N(m.Unsigned(8)) + ",";
          }
        }
        break;
      default:
        result.unknown_type = true;
        result.consumed = start;
        return result;
    }
    if (!complete) break;
    result.messages.push_back(line);
    c = m;
  }
  result.consumed = c.pos();
  return result;
}

}  // namespace gnomon::test
