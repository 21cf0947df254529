// Tracy's C++ instrumentation interface, recorded by Gnomon. A program instrumented
// with Tracy's macros switches by linking gnomon::tracy instead of Tracy's client: the
// macros below have Tracy's names and arguments, and TRACY_ENABLE means what it means
// there (defined: the macros record; not defined: they compile to nothing, and nothing
// of Gnomon is needed). docs/tracy-compatibility.md lists what each macro maps to and
// what is accepted and ignored.
//
// A zone costs what GNOMON_ZONE costs: the source location is a constant-initialized
// static, the begin and end are the same inlined writes.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tracy/TracyColor.hpp"

#ifndef TracyFunction
#define TracyFunction __FUNCTION__
#endif
#ifndef TracyFile
#define TracyFile __FILE__
#endif
#ifndef TracyLine
#define TracyLine __LINE__
#endif
#ifndef TracyConcat
#define TracyConcatIndirect(x, y) x##y
#define TracyConcat(x, y) TracyConcatIndirect(x, y)
#endif

namespace tracy {
enum class PlotFormatType : uint8_t { Number, Memory, Percentage, Watt };
}  // namespace tracy

#ifndef TRACY_ENABLE

#define TracyNoop

#define ZoneNamed(x, y)
#define ZoneNamedN(x, y, z)
#define ZoneNamedC(x, y, z)
#define ZoneNamedNC(x, y, z, w)
#define ZoneTransient(x, y)
#define ZoneTransientN(x, y, z)
#define ZoneTransientNC(x, y, z, w)
#define ZoneScoped
#define ZoneScopedN(x)
#define ZoneScopedC(x)
#define ZoneScopedNC(x, y)
#define ZoneText(x, y)
#define ZoneTextV(x, y, z)
#define ZoneTextF(x, ...)
#define ZoneTextVF(x, y, ...)
#define ZoneName(x, y)
#define ZoneNameV(x, y, z)
#define ZoneNameF(x, ...)
#define ZoneNameVF(x, y, ...)
#define ZoneColor(x)
#define ZoneColorV(x, y)
#define ZoneValue(x)
#define ZoneValueV(x, y)
#define ZoneIsActive false
#define ZoneIsActiveV(x) false

#define FrameMark
#define FrameMarkNamed(x)
#define FrameMarkStart(x)
#define FrameMarkEnd(x)
#define FrameImage(x, y, z, w, a)

#define TracyLockable(type, varname) type varname
#define TracyLockableN(type, varname, desc) type varname
#define TracySharedLockable(type, varname) type varname
#define TracySharedLockableN(type, varname, desc) type varname
#define LockableBase(type) type
#define SharedLockableBase(type) type
#define LockMark(x) (void)x
#define LockableName(x, y, z)

#define TracyPlot(x, y)
#define TracyPlotConfig(x, y, z, w, a)
#define TracyMessage(x, y)
#define TracyMessageL(x)
#define TracyMessageC(x, y, z)
#define TracyMessageLC(x, y)
#define TracyAppInfo(x, y)

#define TracyAlloc(x, y)
#define TracyFree(x)
#define TracyMemoryDiscard(x)
#define TracySecureAlloc(x, y)
#define TracySecureFree(x)
#define TracySecureMemoryDiscard(x)
#define TracyAllocN(x, y, z)
#define TracyFreeN(x, y)
#define TracySecureAllocN(x, y, z)
#define TracySecureFreeN(x, y)

#define ZoneNamedS(x, y, z)
#define ZoneNamedNS(x, y, z, w)
#define ZoneNamedCS(x, y, z, w)
#define ZoneNamedNCS(x, y, z, w, a)
#define ZoneTransientS(x, y, z)
#define ZoneTransientNS(x, y, z, w)
#define ZoneScopedS(x)
#define ZoneScopedNS(x, y)
#define ZoneScopedCS(x, y)
#define ZoneScopedNCS(x, y, z)
#define TracyAllocS(x, y, z)
#define TracyFreeS(x, y)
#define TracyMemoryDiscardS(x, y)
#define TracySecureAllocS(x, y, z)
#define TracySecureFreeS(x, y)
#define TracySecureMemoryDiscardS(x, y)
#define TracyAllocNS(x, y, z, w)
#define TracyFreeNS(x, y, z)
#define TracySecureAllocNS(x, y, z, w)
#define TracySecureFreeNS(x, y, z)
#define TracyMessageS(x, y, z)
#define TracyMessageLS(x, y)
#define TracyMessageCS(x, y, z, w)
#define TracyMessageLCS(x, y, z)

#define TracySourceCallbackRegister(x, y)
#define TracyParameterRegister(x, y)
#define TracyParameterSetup(x, y, z, w)
#define TracyIsConnected false
#define TracyIsStarted false
#define TracySetProgramName(x)
#define TracyFiberEnter(x)
#define TracyFiberEnterHint(x, y)
#define TracyFiberLeave

namespace tracy {
inline void SetThreadName(const char*) {}
}  // namespace tracy

#else  // TRACY_ENABLE

#include "gnomon/gnomon.hpp"

namespace tracy {

namespace detail {

// Tracy's colour 0 is "no colour"; Gnomon's is GNOMON_NO_COLOR (0 is black there).
constexpr uint32_t ToGnomonColor(uint32_t rgb) { return rgb == 0 ? GNOMON_NO_COLOR : (rgb & 0xFFFFFFu); }

}  // namespace detail

extern "C" {
// In libgnomon_tracy (tracy_api.cpp), shared with the C API.
gnomon_source_location* ___gnomon_tracy_transient_location(uint32_t line, const char* source,
                                                           size_t source_size, const char* function,
                                                           size_t function_size, const char* name,
                                                           size_t name_size, uint32_t color);
uint32_t ___gnomon_tracy_plot_id(const char* name);
uint32_t ___gnomon_tracy_frame_id(const char* name);
}

// A zone from its construction to its destruction; inactive (recording nothing) when
// made with active = false. Tracy's zone attributes apply to it while it is the
// innermost zone of its thread, as they do in practice.
class ScopedZone {
 public:
  // depth > 0: with the call stack of that many frames. `active` false: nothing is
  // recorded. Every macro passes both, so that an int or unsigned `active` means what
  // it says.
  ScopedZone(gnomon_source_location* location, int32_t depth, bool active)
      : recorded_(active && location != nullptr &&
                  (depth > 0 ? ::gnomon::detail::RecordZoneBeginWithCallstack(
                                   ::gnomon::detail::LocationId(location), uint32_t(depth), 2)
                             : ::gnomon::detail::RecordZoneBegin(location, 2))) {}
  // A transient zone: a location made at run time (Tracy's allocated source location).
  ScopedZone(uint32_t line, const char* source, size_t source_size, const char* function,
             size_t function_size, const char* name, size_t name_size, uint32_t color, int32_t depth,
             bool active)
      : ScopedZone(active ? ___gnomon_tracy_transient_location(line, source, source_size, function,
                                                               function_size, name, name_size, color)
                          : nullptr,
                   depth, active) {}
  ~ScopedZone() {
    if (recorded_) ::gnomon::detail::RecordZoneEnd();
  }
  ScopedZone(const ScopedZone&) = delete;
  ScopedZone& operator=(const ScopedZone&) = delete;

  void Text(const char* text, size_t size) {
    if (recorded_) gnomon_zone_text(text, size);
  }
  void TextFmt(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (!recorded_) return;
    va_list args;
    va_start(args, format);
    Format(&gnomon_zone_text, format, args);
    va_end(args);
  }
  void Name(const char* text, size_t size) {
    if (recorded_) gnomon_zone_name(text, size);
  }
  void NameFmt(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (!recorded_) return;
    va_list args;
    va_start(args, format);
    Format(&gnomon_zone_name, format, args);
    va_end(args);
  }
  void Color(uint32_t rgb) {
    if (recorded_) gnomon_zone_color(detail::ToGnomonColor(rgb));
  }
  void Value(uint64_t value) {
    if (recorded_) gnomon_zone_value(value);
  }
  bool IsActive() const { return recorded_; }

 private:
  static void Format(void (*set)(const char*, size_t), const char* format, va_list args) {
    char text[1024];
    const int n = std::vsnprintf(text, sizeof(text), format, args);
    if (n > 0) set(text, size_t(n) < sizeof(text) ? size_t(n) : sizeof(text) - 1);
  }

  bool recorded_;
};

template <typename T>
using Lockable = ::gnomon::Lockable<T>;
template <typename T>
using SharedLockable = ::gnomon::Lockable<T>;

inline void SetThreadName(const char* name) { gnomon_set_thread_name(name); }

}  // namespace tracy

// The location of a zone: a constant-initialized static of the enclosing function.
#define TracyGnomonLocation(name, color) GNOMON_STATIC_LOCATION((name), ::tracy::detail::ToGnomonColor(color))

#define TracyNoop

// With TRACY_CALLSTACK defined (a depth), every zone records its call stack, as in Tracy.
#ifdef TRACY_CALLSTACK
#define TracyGnomonDepth_ TRACY_CALLSTACK
#else
#define TracyGnomonDepth_ 0
#endif
#define ZoneNamed(varname, active) ZoneNamedS(varname, TracyGnomonDepth_, active)
#define ZoneNamedN(varname, name, active) ZoneNamedNS(varname, name, TracyGnomonDepth_, active)
#define ZoneNamedC(varname, color, active) ZoneNamedCS(varname, color, TracyGnomonDepth_, active)
#define ZoneNamedNC(varname, name, color, active) \
  ZoneNamedNCS(varname, name, color, TracyGnomonDepth_, active)
#define ZoneTransient(varname, active) ZoneTransientS(varname, TracyGnomonDepth_, active)
#define ZoneTransientN(varname, name, active) ZoneTransientNS(varname, name, TracyGnomonDepth_, active)
#define ZoneTransientNC(varname, name, color, active) \
  ZoneTransientNCS_(varname, name, color, TracyGnomonDepth_, active)

#define ZoneNamedS(varname, depth, active) \
  ::tracy::ScopedZone varname(TracyGnomonLocation(nullptr, 0), int32_t(depth), bool(active))
#define ZoneNamedNS(varname, name, depth, active) \
  ::tracy::ScopedZone varname(TracyGnomonLocation(name, 0), int32_t(depth), bool(active))
#define ZoneNamedCS(varname, color, depth, active) \
  ::tracy::ScopedZone varname(TracyGnomonLocation(nullptr, color), int32_t(depth), bool(active))
#define ZoneNamedNCS(varname, name, color, depth, active) \
  ::tracy::ScopedZone varname(TracyGnomonLocation(name, color), int32_t(depth), bool(active))
#define ZoneTransientS(varname, depth, active) ZoneTransientNCS_(varname, TracyFunction, 0, depth, active)
#define ZoneTransientNS(varname, name, depth, active) ZoneTransientNCS_(varname, name, 0, depth, active)
#define ZoneTransientNCS_(varname, name, color, depth, active)                                      \
  ::tracy::ScopedZone varname(TracyLine, TracyFile, std::strlen(TracyFile), TracyFunction,          \
                              std::strlen(TracyFunction), name, std::strlen(name), uint32_t(color), \
                              int32_t(depth), bool(active))

#define ZoneScoped ZoneNamed(___tracy_scoped_zone, true)
#define ZoneScopedN(name) ZoneNamedN(___tracy_scoped_zone, name, true)
#define ZoneScopedC(color) ZoneNamedC(___tracy_scoped_zone, color, true)
#define ZoneScopedNC(name, color) ZoneNamedNC(___tracy_scoped_zone, name, color, true)
#define ZoneScopedS(depth) ZoneNamedS(___tracy_scoped_zone, depth, true)
#define ZoneScopedNS(name, depth) ZoneNamedNS(___tracy_scoped_zone, name, depth, true)
#define ZoneScopedCS(color, depth) ZoneNamedCS(___tracy_scoped_zone, color, depth, true)
#define ZoneScopedNCS(name, color, depth) ZoneNamedNCS(___tracy_scoped_zone, name, color, depth, true)

#define ZoneText(txt, size) ___tracy_scoped_zone.Text(txt, size)
#define ZoneTextV(varname, txt, size) varname.Text(txt, size)
#define ZoneTextF(fmt, ...) ___tracy_scoped_zone.TextFmt(fmt, ##__VA_ARGS__)
#define ZoneTextVF(varname, fmt, ...) varname.TextFmt(fmt, ##__VA_ARGS__)
#define ZoneName(txt, size) ___tracy_scoped_zone.Name(txt, size)
#define ZoneNameV(varname, txt, size) varname.Name(txt, size)
#define ZoneNameF(fmt, ...) ___tracy_scoped_zone.NameFmt(fmt, ##__VA_ARGS__)
#define ZoneNameVF(varname, fmt, ...) varname.NameFmt(fmt, ##__VA_ARGS__)
#define ZoneColor(color) ___tracy_scoped_zone.Color(color)
#define ZoneColorV(varname, color) varname.Color(color)
#define ZoneValue(value) ___tracy_scoped_zone.Value(value)
#define ZoneValueV(varname, value) varname.Value(value)
#define ZoneIsActive ___tracy_scoped_zone.IsActive()
#define ZoneIsActiveV(varname) varname.IsActive()

// Named frame series are told apart by their name's pointer, as in Tracy.
#define FrameMark gnomon_frame_mark(0)
#define FrameMarkNamed(name) gnomon_frame_mark(::tracy::___gnomon_tracy_frame_id(name))
#define FrameMarkStart(name) gnomon_frame_begin(::tracy::___gnomon_tracy_frame_id(name))
#define FrameMarkEnd(name) gnomon_frame_end(::tracy::___gnomon_tracy_frame_id(name))
#define FrameImage(image, width, height, offset, flip) \
  static_cast<void>(sizeof(image) + sizeof(width) + sizeof(height) + sizeof(offset) + sizeof(flip))

// A lock is named after its declaration, as Tracy names it ("std::mutex m_lock").
#define TracyLockable(type, varname) \
  ::tracy::Lockable<type> varname { #type " " #varname }
#define TracyLockableN(type, varname, desc) \
  ::tracy::Lockable<type> varname { desc }
#define TracySharedLockable(type, varname) \
  ::tracy::SharedLockable<type> varname { #type " " #varname }
#define TracySharedLockableN(type, varname, desc) \
  ::tracy::SharedLockable<type> varname { desc }
#define LockableBase(type) ::tracy::Lockable<type>
#define SharedLockableBase(type) ::tracy::SharedLockable<type>
#define LockMark(varname) static_cast<void>(varname)
#define LockableName(varname, txt, size) static_cast<void>(sizeof(varname) + sizeof(txt) + sizeof(size))

// Plots are told apart by their name's pointer, as in Tracy.
#define TracyPlot(name, val) gnomon_plot(::tracy::___gnomon_tracy_plot_id(name), double(val))
#define TracyPlotConfig(name, type, step, fill, color) \
  static_cast<void>(sizeof(name) + sizeof(type) + sizeof(step) + sizeof(fill) + sizeof(color))

#define TracyMessage(txt, size) gnomon_message(txt, size, GNOMON_INFO)
#define TracyMessageL(txt) gnomon_message(txt, std::strlen(txt), GNOMON_INFO)
#define TracyMessageC(txt, size, color) (static_cast<void>(color), gnomon_message(txt, size, GNOMON_INFO))
#define TracyMessageLC(txt, color) \
  (static_cast<void>(color), gnomon_message(txt, std::strlen(txt), GNOMON_INFO))
#define TracyAppInfo(txt, size) gnomon_message(txt, size, GNOMON_INFO)
#define TracyMessageS(txt, size, depth) TracyMessage(txt, size)
#define TracyMessageLS(txt, depth) TracyMessageL(txt)
#define TracyMessageCS(txt, size, color, depth) TracyMessageC(txt, size, color)
#define TracyMessageLCS(txt, color, depth) TracyMessageLC(txt, color)

#define TracyAlloc(ptr, size) gnomon_alloc(ptr, size, nullptr)
#define TracyFree(ptr) gnomon_free(ptr, nullptr)
#define TracySecureAlloc(ptr, size) gnomon_alloc(ptr, size, nullptr)
#define TracySecureFree(ptr) gnomon_free(ptr, nullptr)
#define TracyAllocN(ptr, size, name) gnomon_alloc(ptr, size, name)
#define TracyFreeN(ptr, name) gnomon_free(ptr, name)
#define TracySecureAllocN(ptr, size, name) gnomon_alloc(ptr, size, name)
#define TracySecureFreeN(ptr, name) gnomon_free(ptr, name)
#define TracyMemoryDiscard(name) static_cast<void>(name)
#define TracySecureMemoryDiscard(name) static_cast<void>(name)
#define TracyAllocS(ptr, size, depth) TracyAlloc(ptr, size)
#define TracyFreeS(ptr, depth) TracyFree(ptr)
#define TracySecureAllocS(ptr, size, depth) TracyAlloc(ptr, size)
#define TracySecureFreeS(ptr, depth) TracyFree(ptr)
#define TracyAllocNS(ptr, size, depth, name) TracyAllocN(ptr, size, name)
#define TracyFreeNS(ptr, depth, name) TracyFreeN(ptr, name)
#define TracySecureAllocNS(ptr, size, depth, name) TracyAllocN(ptr, size, name)
#define TracySecureFreeNS(ptr, depth, name) TracyFreeN(ptr, name)
#define TracyMemoryDiscardS(name, depth) static_cast<void>(name)
#define TracySecureMemoryDiscardS(name, depth) static_cast<void>(name)

#define TracySourceCallbackRegister(cb, data) (static_cast<void>(cb), static_cast<void>(data))
#define TracyParameterRegister(cb, data) (static_cast<void>(cb), static_cast<void>(data))
#define TracyParameterSetup(idx, name, is_bool, val) \
  static_cast<void>(sizeof(idx) + sizeof(name) + sizeof(is_bool) + sizeof(val))
#define TracyIsConnected (gnomon_is_connected() != 0)
#define TracyIsStarted true
#define TracySetProgramName(name) static_cast<void>(name)
#define TracyFiberEnter(fiber) static_cast<void>(fiber)
#define TracyFiberEnterHint(fiber, group) static_cast<void>(sizeof(fiber) + sizeof(group))
#define TracyFiberLeave static_cast<void>(0)

#endif  // TRACY_ENABLE
