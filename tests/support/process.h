// Child processes and scratch directories for tests that run real programs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gnomon::test {

// Whether a process's resident memory says what the code holds: under AddressSanitizer,
// freed memory waits in a quarantine and shadow memory comes with every page, so a bound
// on resident memory is checked only in the other builds.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kResidentMemoryIsMeasurable = false;
#else
inline constexpr bool kResidentMemoryIsMeasurable = true;
#endif

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Points this process (and so the children it starts) at a runtime directory of its own
// (XDG_RUNTIME_DIR, where programs announce themselves: gnomon/protocol/discovery.h),
// until destroyed.
class RuntimeDir {
 public:
  RuntimeDir() {
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    if (old != nullptr) old_ = old;
    setenv("XDG_RUNTIME_DIR", dir_.path().c_str(), 1);
  }
  ~RuntimeDir() {
    if (old_) {
      setenv("XDG_RUNTIME_DIR", old_->c_str(), 1);
    } else {
      unsetenv("XDG_RUNTIME_DIR");
    }
  }
  RuntimeDir(const RuntimeDir&) = delete;
  RuntimeDir& operator=(const RuntimeDir&) = delete;
  const ScratchDir& scratch() const { return dir_; }
  std::string announce_dir() const { return dir_.File("gnomon"); }

 private:
  ScratchDir dir_;
  std::optional<std::string> old_;
};

// A running child process; killed (SIGKILL) and reaped on destruction if still alive.
class ChildProcess {
 public:
  // Starts argv[0] with the current environment plus `env`. Output goes to `log_path`
  // when given, else it is inherited.
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
               const std::string& log_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code, 128+signal when killed, or -1 when it is still running at the timeout.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // CPU seconds (user + system) the process used, once Wait() has reaped it.
  double cpu_seconds() const { return cpu_seconds_; }
  // Its peak resident memory, once Wait() has reaped it.
  uint64_t peak_rss_bytes() const { return peak_rss_bytes_; }
  void Signal(int signal);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  double cpu_seconds_ = 0;
  uint64_t peak_rss_bytes_ = 0;
};

// Waits for a program started with GNOMON_PORT_FILE=path to write its port; 0 on timeout.
uint16_t WaitForPortFile(const std::string& path,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Runs a shell command; returns its exit code and puts stdout+stderr in `output`.
int RunCommand(const std::string& command, std::string* output = nullptr);

std::string ReadFile(const std::string& path);

}  // namespace gnomon::test
