// The C API, and through it most of the C++ API: one implementation of every event.
#include <atomic>
#include <chrono>
#include <cstring>

#include "gnomon/gnomon.h"
#include "gnomon/gnomon.hpp"
#include "profiler.h"
#include "sender.h"

namespace {

using gnomon::client::Profiler;
namespace protocol = gnomon::protocol;

// Writes message m (with its tail) on the calling thread, or drops it when the buffer
// budget is spent.
template <typename M>
bool WriteEvent(const M& m, const typename M::Tail& tail = {}) {
  uint8_t* p = gnomon::detail::Reserve(gnomon::protocol::WireSize<M>(tail));
  if (p == nullptr) return false;
  gnomon::detail::Commit(gnomon::protocol::WriteMessage(p, m, tail));
  return true;
}

// Frame spans by name (FrameBegin/FrameEnd pair by name, on any thread): whether the
// open one's begin was recorded, so that an end whose begin was not (on demand, before
// the capture; the buffer full) is not recorded either. Names past the table are not
// followed: their ends are always recorded.
enum FrameState : uint8_t { kNoFrame = 0, kFrameRecorded = 1, kFrameNotRecorded = 2 };
constexpr uint32_t kFollowedFrameNames = 1024;
constinit std::atomic<uint8_t> g_frame_state[kFollowedFrameNames] = {};

// The same for an attribute of the innermost open zone: not recorded when that zone's
// begin was not (it would land on the zone around it).
template <typename M>
void WriteZoneAttribute(const M& m, const typename M::Tail& tail = {}) {
  if (gnomon::detail::tls_writer.unrecorded_depth != 0) {
    gnomon::detail::CountNotRecorded();
    return;
  }
  WriteEvent(m, tail);
}

std::string_view InlineString(const char* text, size_t length) {
  return gnomon::client::ClampString(text, length, GNOMON_MAX_INLINE_STRING);
}

bool StartedConfigure(const std::function<void(gnomon::client::Config&)>& change) {
  return Profiler::Configure(change);
}

}  // namespace

extern "C" {

int gnomon_set_listen_address(const char* address, uint16_t port) {
  if (address == nullptr) return -1;
  const std::string copy = address;
  return StartedConfigure([&](auto& config) {
    config.address = copy;
    config.port = port;
  })
             ? 0
             : -1;
}

int gnomon_set_buffer_budget(uint64_t bytes) {
  return StartedConfigure([&](auto& config) { config.buffer_budget_bytes = bytes; }) ? 0 : -1;
}

int gnomon_set_buffer_policy(gnomon_buffer_policy policy) {
  if (policy < GNOMON_BUFFER_AUTO || policy > GNOMON_BUFFER_RING) return -1;
  return StartedConfigure(
             [&](auto& config) { config.buffer_policy = static_cast<gnomon::client::BufferPolicy>(policy); })
             ? 0
             : -1;
}

int gnomon_set_on_demand(int enabled) {
  return StartedConfigure([&](auto& config) { config.on_demand = enabled != 0; }) ? 0 : -1;
}

int gnomon_set_output_file(const char* path) {
  if (path == nullptr || *path == '\0') return -1;
  const std::string copy = path;
  return StartedConfigure([&](auto& config) { config.output_path = copy; }) ? 0 : -1;
}

int gnomon_save_recording(const char* path) {
  return Profiler::Get().sender().SaveRecording(path != nullptr ? path : "") ? 0 : -1;
}

void gnomon_request_save(void) { gnomon::client::Sender::RequestSave(); }

int gnomon_startup(void) { return Profiler::Get().listen_ok() ? 0 : -1; }

uint16_t gnomon_listen_port(void) { return Profiler::IsStarted() ? Profiler::Get().sender().port() : 0; }

int gnomon_is_connected(void) {
  return Profiler::IsStarted() && Profiler::Get().sender().is_connected() ? 1 : 0;
}

int gnomon_wait_for_server(uint32_t timeout_ms) {
  return Profiler::Get().sender().WaitForServer(std::chrono::milliseconds(timeout_ms)) ? 1 : 0;
}

void gnomon_shutdown(void) {
  if (Profiler::IsStarted()) Profiler::Get().Shutdown();
}

uint64_t gnomon_dropped_events(void) {
  return Profiler::IsStarted() ? Profiler::Get().registry().dropped_events() : 0;
}

uint64_t gnomon_now(void) {
  Profiler::Get();  // the timer is chosen at start-up
  return gnomon::detail::Now();
}

void gnomon_zone_begin(gnomon_source_location* location) { gnomon::ZoneBegin(location); }
void gnomon_zone_begin_callstack(gnomon_source_location* location, uint32_t depth) {
  if (gnomon::detail::tls_writer.unrecorded_depth != 0) {
    ++gnomon::detail::tls_writer.unrecorded_depth;  // inside a zone not recorded (see ZoneBegin)
    gnomon::detail::CountNotRecorded();
  } else if (!gnomon::detail::RecordZoneBeginCallstack(location, depth, 1)) {
    ++gnomon::detail::tls_writer.unrecorded_depth;
  }
}
void gnomon_zone_end(void) { gnomon::ZoneEnd(); }

void gnomon_zone_name(const char* name, size_t length) {
  WriteZoneAttribute(protocol::ZoneName{}, {.name = InlineString(name, length)});
}

void gnomon_zone_text(const char* text, size_t length) {
  WriteZoneAttribute(protocol::ZoneText{}, {.text = InlineString(text, length)});
}

void gnomon_zone_color(uint32_t rgb) { WriteZoneAttribute(protocol::ZoneColor{.rgb = rgb}); }
void gnomon_zone_value(uint64_t value) { WriteZoneAttribute(protocol::ZoneValue{.value = value}); }

uint32_t gnomon_frame_name(const char* name) {
  return Profiler::Get().registry().RegisterString(protocol::StringKind::kFrameName, name);
}

void gnomon_frame_mark(uint32_t name_id) {
  WriteEvent(protocol::FrameMark{.name_id = name_id, .tick = gnomon::detail::Now()});
}
void gnomon_frame_begin(uint32_t name_id) {
  const bool recorded = WriteEvent(protocol::FrameBegin{.name_id = name_id, .tick = gnomon::detail::Now()});
  if (name_id < kFollowedFrameNames) {
    g_frame_state[name_id].store(recorded ? kFrameRecorded : kFrameNotRecorded, std::memory_order_relaxed);
  }
}
void gnomon_frame_end(uint32_t name_id) {
  if (name_id < kFollowedFrameNames &&
      g_frame_state[name_id].exchange(kNoFrame, std::memory_order_relaxed) == kFrameNotRecorded) {
    gnomon::detail::CountNotRecorded();
    return;
  }
  WriteEvent(protocol::FrameEnd{.name_id = name_id, .tick = gnomon::detail::Now()});
}

void gnomon_set_thread_name(const char* name) {
  Profiler::Get().registry().SetThreadName(gnomon::client::CurrentThreadState(), name);
}

void gnomon_message(const char* text, size_t length, gnomon_severity severity) {
  WriteEvent(protocol::LogMessage{.tick = gnomon::detail::Now(), .severity = static_cast<uint8_t>(severity)},
             {.text = InlineString(text, length)});
}

uint32_t gnomon_plot_id(const char* name) {
  return Profiler::Get().registry().RegisterString(protocol::StringKind::kPlotName, name);
}

void gnomon_plot(uint32_t plot_id, double value) {
  WriteEvent(protocol::PlotValue{.plot_id = plot_id, .tick = gnomon::detail::Now(), .value = value});
}

}  // extern "C"
