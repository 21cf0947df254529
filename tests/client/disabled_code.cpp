// Compiled with GNOMON_DISABLE: every macro and inline call must vanish.
#ifndef GNOMON_DISABLE
#error "this file must be compiled with GNOMON_DISABLE"
#endif
#include <gnomon/gnomon.hpp>
#include <gnomon/new_delete.hpp>  // defines nothing: the program's own operators stay
#include <mutex>
#include <shared_mutex>

void RecordWithProfilingCompiledOut(int zones) {
  for (int i = 0; i < zones; ++i) {
    GNOMON_ZONE("Disabled");
    GNOMON_FUNCTION();
    gnomon::ZoneText("not recorded");
    GNOMON_PLOT("disabled plot", 1.0);
    GNOMON_FRAME_MARK_NAMED("disabled frames");
    gnomon::Message("not recorded");
  }
  gnomon::GpuZoneBegin(gnomon::GpuContextCreate({}), 1, nullptr);  // compiled out: never dereferenced
  gnomon::GpuZoneEnd(1, 2);
  GNOMON_ZONE_BEGIN("C macro");
  GNOMON_ZONE_END();
  int block = 0;
  GNOMON_ALLOC(&block, sizeof(block));
  GNOMON_FREE(&block);
  GNOMON_ALLOC_NAMED(&block, sizeof(block), "disabled pool");
  GNOMON_FREE_NAMED(&block, "disabled pool");
  gnomon::Lockable<std::mutex> mutex("disabled lock");
  { std::lock_guard lock(mutex); }
  gnomon::Lockable<std::shared_mutex> shared("disabled shared lock");
  { std::shared_lock lock(shared); }
}
