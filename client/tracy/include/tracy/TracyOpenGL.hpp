// Tracy's OpenGL GPU zone interface, recorded by Gnomon's OpenGL collector
// (gnomon/opengl.hpp): TracyGpuContext, the TracyGpu*Zone macros and TracyGpuCollect,
// with Tracy's contract: include the program's GL header (with glQueryCounter and the
// other GL 3.3 query functions declared) first; the context belongs to the thread whose
// GL context is current; TracyGpuCollect once a frame.
//
// The collector reads GL_TIMESTAMP between two CPU clock reads to calibrate (the
// bracket is the pair's stated uncertainty), keeps a ring of queries, and collects
// without waiting. The GL functions are the program's own symbols (its loader's, e.g.
// glad's pointers), resolved by name in the including file.
#pragma once

#include "tracy/Tracy.hpp"

#ifndef TRACY_ENABLE

#define TracyGpuContext
#define TracyGpuContextName(name, size)
#define TracyGpuNamedZone(varname, name, active)
#define TracyGpuNamedZoneC(varname, name, color, active)
#define TracyGpuZone(name)
#define TracyGpuZoneC(name, color)
#define TracyGpuZoneTransient(varname, name, active)
#define TracyGpuCollect
#define TracyGpuNamedZoneS(varname, name, depth, active)
#define TracyGpuNamedZoneCS(varname, name, color, depth, active)
#define TracyGpuZoneS(name, depth)
#define TracyGpuZoneCS(name, color, depth)
#define TracyGpuZoneTransientS(varname, name, depth, active)

#else  // TRACY_ENABLE

#include <cstring>

#include "gnomon/opengl.hpp"

namespace tracy {
namespace detail {

// The calling thread's context, made by TracyGpuContext; like Tracy's, it lives as
// long as the program.
inline thread_local ::gnomon::opengl::Context* tls_gl_context = nullptr;

// The GL functions the collector needs, from the including file's declarations.
inline void* GlSymbol(const char* name) {
  struct Entry {
    const char* name;
    void* function;
  };
  const Entry entries[] = {
      {"glGenQueries", reinterpret_cast<void*>(glGenQueries)},
      {"glDeleteQueries", reinterpret_cast<void*>(glDeleteQueries)},
      {"glQueryCounter", reinterpret_cast<void*>(glQueryCounter)},
      {"glGetQueryObjectiv", reinterpret_cast<void*>(glGetQueryObjectiv)},
      {"glGetQueryObjectui64v", reinterpret_cast<void*>(glGetQueryObjectui64v)},
      {"glGetInteger64v", reinterpret_cast<void*>(glGetInteger64v)},
      {"glGetQueryiv", reinterpret_cast<void*>(glGetQueryiv)},
      {"glGetString", reinterpret_cast<void*>(glGetString)},
  };
  for (const Entry& e : entries) {
    if (std::strcmp(e.name, name) == 0) return e.function;
  }
  return nullptr;
}

inline void CreateGlContext() {
  if (tls_gl_context == nullptr) tls_gl_context = ::gnomon::opengl::Context::Create(&GlSymbol).release();
}

}  // namespace detail

// A GPU zone of the thread's context, from its construction to its destruction.
class GpuCtxScope {
 public:
  GpuCtxScope(gnomon_source_location* location, bool active)
      : context_(detail::tls_gl_context),
        is_open_(active && context_ != nullptr && location != nullptr && context_->BeginZone(location)) {}
  GpuCtxScope(gnomon_source_location* location, int /*depth*/, bool active) : GpuCtxScope(location, active) {}
  GpuCtxScope(uint32_t line, const char* source, size_t source_size, const char* function,
              size_t function_size, const char* name, size_t name_size, bool active)
      : GpuCtxScope(active ? ___gnomon_tracy_transient_location(line, source, source_size, function,
                                                                function_size, name, name_size, 0)
                           : nullptr,
                    active) {}
  ~GpuCtxScope() {
    if (is_open_) context_->EndZone();
  }
  GpuCtxScope(const GpuCtxScope&) = delete;
  GpuCtxScope& operator=(const GpuCtxScope&) = delete;

 private:
  ::gnomon::opengl::Context* context_;
  bool is_open_;
};

}  // namespace tracy

#define TracyGpuContext ::tracy::detail::CreateGlContext()
#define TracyGpuContextName(name, size)                                           \
  do {                                                                            \
    if (::tracy::detail::tls_gl_context != nullptr)                               \
      gnomon_gpu_context_name(::tracy::detail::tls_gl_context->id(), name, size); \
  } while (0)
#define TracyGpuNamedZone(varname, name, active) \
  ::tracy::GpuCtxScope varname(TracyGnomonLocation(name, 0), active)
#define TracyGpuNamedZoneC(varname, name, color, active) \
  ::tracy::GpuCtxScope varname(TracyGnomonLocation(name, color), active)
#define TracyGpuZone(name) TracyGpuNamedZone(___tracy_gpu_zone, name, true)
#define TracyGpuZoneC(name, color) TracyGpuNamedZoneC(___tracy_gpu_zone, name, color, true)
#define TracyGpuZoneTransient(varname, name, active)                                        \
  ::tracy::GpuCtxScope varname(TracyLine, TracyFile, std::strlen(TracyFile), TracyFunction, \
                               std::strlen(TracyFunction), name, std::strlen(name), active)
#define TracyGpuCollect                                                                         \
  do {                                                                                          \
    if (::tracy::detail::tls_gl_context != nullptr) ::tracy::detail::tls_gl_context->Collect(); \
  } while (0)
#define TracyGpuNamedZoneS(varname, name, depth, active) TracyGpuNamedZone(varname, name, active)
#define TracyGpuNamedZoneCS(varname, name, color, depth, active) \
  TracyGpuNamedZoneC(varname, name, color, active)
#define TracyGpuZoneS(name, depth) TracyGpuZone(name)
#define TracyGpuZoneCS(name, color, depth) TracyGpuZoneC(name, color)
#define TracyGpuZoneTransientS(varname, name, depth, active) TracyGpuZoneTransient(varname, name, active)

#endif  // TRACY_ENABLE
