// Files the tools write for the user, written so that nothing the user had is lost.
//
// A capture may fail before it has anything to keep (nobody listening, a refused
// handshake); a save may fail half-way (disk full). So an OutputFile is created under a
// temporary name in the destination's folder, exclusively (never through a link a
// stranger planted there), and moved onto the destination only by Publish(), in one
// rename. Until then the destination is not touched; an OutputFile destroyed without
// Publish() removes its temporary file.
//
//   if (Status s = CheckOutputPath(path, overwrite); !s.ok()) fail(s);  // before any work
//   auto out = OutputFile::Create(path);
//   ... write to out->file() ...
//   out->Publish(overwrite);
//
// Only a trace is ever replaced (a regular file that starts as one, or an empty one),
// and only when asked; a symbolic link at the destination is refused rather than
// followed or replaced, and so is anything else (a device, a FIFO, a folder, a regular
// file that holds something else). Create() first removes the temporary files of
// earlier writers of the same path that were killed mid-write (this user's, made on this
// machine by a process that is gone, untouched for a minute).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "gnomon/tracefile/status.h"

namespace gnomon::tracefile {

enum class Overwrite { kNo, kYes };

// Whether `path` may receive a new file: ok when nothing is there, or (with
// Overwrite::kYes) a trace; otherwise one line saying why not and what to do.
Status CheckOutputPath(const std::string& path, Overwrite overwrite);

class OutputFile {
 public:
  // Creates a new, empty file beside `path` (same folder, so the final rename stays on
  // one file system), opened for binary writing.
  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* file() const { return file_; }
  const std::string& path() const { return path_; }
  // Where the bytes are until Publish(); path() afterwards.
  const std::string& current_path() const { return published_ ? path_ : temp_path_; }
  bool is_published() const { return published_; }

  // Moves the file onto path(), checked again as CheckOutputPath does (the destination
  // may have changed since). On failure the file stays under its temporary name, and
  // the message says where. Writing may go on after it; calling it twice is harmless.
  Status Publish(Overwrite overwrite);
  // Flushes and closes the file (once); the first error, if any.
  Status Close();

 private:
  OutputFile(std::FILE* file, std::string path, std::string temp_path)
      : file_(file), path_(std::move(path)), temp_path_(std::move(temp_path)) {}

  std::FILE* file_;
  std::string path_;
  std::string temp_path_;
  bool published_ = false;
};

// Appends the first `bytes` of the file at `from` (all of it when it is shorter) to `out`.
Status CopyFileBytes(const std::string& from, uint64_t bytes, OutputFile& out);
// The first `bytes` of a file open for reading at its start, all of them (`from` names
// it in errors).
Status CopyFileBytes(std::FILE* in, const std::string& from, uint64_t bytes, OutputFile& out);

}  // namespace gnomon::tracefile
