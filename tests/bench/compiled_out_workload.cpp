// The tight workload compiled with GNOMON_DISABLE, for `gnomon-bench client --mode
// disabled`: what instrumentation costs when it is compiled out.
#ifndef GNOMON_DISABLE
#error "this file must be compiled with GNOMON_DISABLE"
#endif
#include <gnomon/gnomon.hpp>

void TightWorkloadCompiledOut(long zones) {
  for (long i = 0; i < zones; ++i) {
    GNOMON_ZONE("Tight");
    asm volatile("" ::: "memory");  // keep the loop: it is what remains of the zone
  }
}
