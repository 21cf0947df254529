// The C API, and through it most of the C++ API: one implementation of every event.
#include <chrono>
#include <cstring>

#include "gnomon/gnomon.h"
#include "gnomon/gnomon.hpp"
#include "profiler.h"
#include "sender.h"

namespace {

using gnomon::client::Profiler;
using gnomon::protocol::MessageType;
using gnomon::protocol::StoreLe;

void WriteZoneString(MessageType type, const char* text, size_t length) {
  const std::string_view s = gnomon::client::ClampString(text, length, GNOMON_MAX_INLINE_STRING);
  uint8_t* p = gnomon::detail::Reserve(sizeof(gnomon::protocol::ZoneString) + s.size());
  if (p == nullptr) return;
  p[0] = static_cast<uint8_t>(type);
  StoreLe<uint16_t>(p + 1, static_cast<uint16_t>(s.size()));
  if (!s.empty()) std::memcpy(p + 3, s.data(), s.size());
  gnomon::detail::Commit(p + 3 + s.size());
}

template <typename T>
void WriteFixed(MessageType type, T payload) {
  uint8_t* p = gnomon::detail::Reserve(1 + sizeof(T));
  if (p == nullptr) return;
  p[0] = static_cast<uint8_t>(type);
  StoreLe<T>(p + 1, payload);
  gnomon::detail::Commit(p + 1 + sizeof(T));
}

void WriteFrameEvent(MessageType type, uint32_t name_id) {
  uint8_t* p = gnomon::detail::Reserve(sizeof(gnomon::protocol::FrameEvent));
  if (p == nullptr) return;
  p[0] = static_cast<uint8_t>(type);
  StoreLe<uint32_t>(p + 1, name_id);
  StoreLe<uint64_t>(p + 5, gnomon::detail::Now());
  gnomon::detail::Commit(p + sizeof(gnomon::protocol::FrameEvent));
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
  if (policy < GNOMON_BUFFER_AUTO || policy > GNOMON_BUFFER_WAIT) return -1;
  return StartedConfigure([&](auto& config) { config.buffer_policy = static_cast<gnomon::client::BufferPolicy>(policy); })
             ? 0
             : -1;
}

int gnomon_startup(void) { return Profiler::Get().listen_ok() ? 0 : -1; }

uint16_t gnomon_listen_port(void) {
  return Profiler::IsStarted() ? Profiler::Get().sender().port() : 0;
}

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
  return Profiler::IsStarted() ? Profiler::Get().dropped_events() : 0;
}

uint64_t gnomon_now(void) {
  Profiler::Get();  // the timer is chosen at start-up
  return gnomon::detail::Now();
}

void gnomon_zone_begin(gnomon_source_location* location) { gnomon::ZoneBegin(location); }
void gnomon_zone_end(void) { gnomon::ZoneEnd(); }

void gnomon_zone_name(const char* name, size_t length) {
  WriteZoneString(MessageType::kZoneName, name, length);
}

void gnomon_zone_text(const char* text, size_t length) {
  WriteZoneString(MessageType::kZoneText, text, length);
}

void gnomon_zone_color(uint32_t rgb) { WriteFixed<uint32_t>(MessageType::kZoneColor, rgb); }
void gnomon_zone_value(uint64_t value) { WriteFixed<uint64_t>(MessageType::kZoneValue, value); }

uint32_t gnomon_frame_name(const char* name) {
  return Profiler::Get().RegisterString(gnomon::protocol::StringKind::kFrameName, name);
}

void gnomon_frame_mark(uint32_t name_id) { WriteFrameEvent(MessageType::kFrameMark, name_id); }
void gnomon_frame_begin(uint32_t name_id) { WriteFrameEvent(MessageType::kFrameBegin, name_id); }
void gnomon_frame_end(uint32_t name_id) { WriteFrameEvent(MessageType::kFrameEnd, name_id); }

void gnomon_set_thread_name(const char* name) {
  Profiler& profiler = Profiler::Get();
  profiler.SetThreadName(gnomon::client::CurrentThreadState(), name);
}

void gnomon_message(const char* text, size_t length, gnomon_severity severity) {
  const std::string_view s = gnomon::client::ClampString(text, length, GNOMON_MAX_INLINE_STRING);
  uint8_t* p = gnomon::detail::Reserve(sizeof(gnomon::protocol::LogMessage) + s.size());
  if (p == nullptr) return;
  p[0] = static_cast<uint8_t>(MessageType::kLogMessage);
  StoreLe<uint64_t>(p + 1, gnomon::detail::Now());
  p[9] = static_cast<uint8_t>(severity);
  StoreLe<uint16_t>(p + 10, static_cast<uint16_t>(s.size()));
  if (!s.empty()) std::memcpy(p + 12, s.data(), s.size());
  gnomon::detail::Commit(p + 12 + s.size());
}

uint32_t gnomon_plot_id(const char* name) {
  return Profiler::Get().RegisterString(gnomon::protocol::StringKind::kPlotName, name);
}

void gnomon_plot(uint32_t plot_id, double value) {
  uint8_t* p = gnomon::detail::Reserve(sizeof(gnomon::protocol::PlotValue));
  if (p == nullptr) return;
  p[0] = static_cast<uint8_t>(MessageType::kPlotValue);
  StoreLe<uint32_t>(p + 1, plot_id);
  StoreLe<uint64_t>(p + 5, gnomon::detail::Now());
  StoreLe<double>(p + 13, value);
  gnomon::detail::Commit(p + sizeof(gnomon::protocol::PlotValue));
}

}  // extern "C"
