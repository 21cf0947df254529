// Annotations: the named, coloured time ranges the user marked, listed (a click goes
// there, x deletes), with the dialog that names a new one over the selected range (A,
// or View > Annotate the selected range). They are kept beside the trace
// (gnomon/viewer/annotations.h), written at every change; the timeline draws them.
#pragma once

#include <string>

#include "workspace.h"

namespace gnomon::viewer {

class AnnotationsWindow {
 public:
  bool open = false;
  // Reads the annotations kept for the trace shown (`path`: where; "" keeps them in
  // memory only, as for a live capture).
  void Load(Workspace& ws, const std::string& path);
  // Starts naming the selected range (the dialog opens at the next Draw).
  void AskForName() { asking_ = true; }
  // Adds one over the selected range at once (scripted runs: --annotate TEXT).
  void Annotate(Workspace& ws, const std::string& text, uint32_t color);
  void Draw(const server::TraceModel& model, Workspace& ws);

 private:
  void Save(Workspace& ws);
  void NameDialog(Workspace& ws);
  bool asking_ = false;
  char text_[256] = {};
  int color_ = 0;
};

}  // namespace gnomon::viewer
