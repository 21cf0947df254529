// The small trace the report, CSV and Chrome export tests read: program "reporter" (pid
// 5), on "io thread" (OS id 11) the zone "Load \"assets\"" (1,000 to 9,000 ticks, which
// are ns) holding "Parse" (2,000 to 5,000, text "tab\there"), two frame marks, the plot
// "memory" (1.5 at 3,000), a message at 4,000, and the goodbye at 9,500.
#pragma once

#include "build_model.h"
#include "gnomon/server/trace_model.h"
#include "stream_writer.h"

namespace gnomon::test {

inline server::TraceModel SampleModel() {
  StreamWriter w;
  w.AppInfo("reporter", 5).SourceLocation(1, "Load \"assets\"", "load", "io.cpp", 3);
  w.SourceLocation(2, "Parse", "parse", "io.cpp", 9).ThreadInfo(1, 11, "io thread").ThreadContext(1);
  w.ZoneBegin(1, 1000).ZoneBegin(2, 2000).ZoneText("tab\there").ZoneEnd(5000).ZoneEnd(9000);
  w.Frame(protocol::MessageType::kFrameMark, 0, 1000).Frame(protocol::MessageType::kFrameMark, 0, 9000);
  w.String(4, protocol::StringKind::kPlotName, "memory").Plot(4, 3000, 1.5);
  w.Message(4000, 4, "disk \"full\"\n").End(9500);
  return BuildModel(w);
}

}  // namespace gnomon::test
