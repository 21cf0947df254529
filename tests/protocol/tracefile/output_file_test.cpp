// OutputFile on a real folder: temporary files left by writers killed mid-write are
// cleaned up, and nothing that is not a trace is ever replaced.
#include "gnomon/tracefile/output_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "../../support/process.h"

using namespace gnomon::tracefile;
using gnomon::test::ScratchDir;

namespace {

// The pid of a process that has ended (a child, forked and reaped).
pid_t EndedPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

bool Exists(const std::string& path) {
  return std::filesystem::exists(std::filesystem::symlink_status(path));
}

}  // namespace

TEST_CASE("a writer's temporary file left by a killed process is removed by the next writer of the path") {
  ScratchDir dir;
  const std::string path = dir.File("run.gnomon");
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  const std::string here = std::string("-") + host;
  const std::string stale = path + ".partial-" + std::to_string(EndedPid()) + "-0abc12" + here;
  const std::string live =
      path + ".partial-" + std::to_string(getppid()) + "-0abc13" + here;  // its writer runs
  const std::string other = dir.File("other.gnomon.partial-" + std::to_string(EndedPid()) + "-0abc14" + here);
  const std::string elsewhere = path + ".partial-" + std::to_string(EndedPid()) + "-0abc15-another-machine";
  const std::string fresh = path + ".partial-" + std::to_string(EndedPid()) + "-0abc16" + here;
  const std::string not_ours = path + ".partial-notapid";
  for (const std::string& name : {stale, live, other, elsewhere, fresh, not_ours}) {
    std::ofstream(name) << "half a trace";
    if (name == fresh) continue;
    const timespec hour_ago[2] = {{time(nullptr) - 3600, 0}, {time(nullptr) - 3600, 0}};
    REQUIRE(utimensat(AT_FDCWD, name.c_str(), hour_ago, 0) == 0);
  }
  auto out = OutputFile::Create(path);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  CHECK_FALSE(Exists(stale));
  CHECK(Exists(live));       // its process lives: it may still be writing
  CHECK(Exists(other));      // another path's: not this writer's to judge
  CHECK(Exists(elsewhere));  // another machine's pid means nothing here
  CHECK(Exists(fresh));      // written to within the minute
  CHECK(Exists(not_ours));   // not a name this writer makes
  CHECK(Exists(out.value()->current_path()));
  REQUIRE(out.value()->Publish(Overwrite::kNo).ok());
  CHECK(Exists(path));
}

TEST_CASE("only a trace, or an empty file, is replaced when overwriting is allowed") {
  ScratchDir dir;
  std::ofstream(dir.File("trace.gnomon")) << "GNOMONTF and the rest of a trace";
  std::ofstream(dir.File("empty.gnomon")).flush();
  std::ofstream(dir.File("notes.txt")) << "notes";
  std::ofstream(dir.File("short")) << "GNO";
  CHECK(CheckOutputPath(dir.File("trace.gnomon"), Overwrite::kYes).ok());
  CHECK(CheckOutputPath(dir.File("empty.gnomon"), Overwrite::kYes).ok());
  CHECK_FALSE(CheckOutputPath(dir.File("trace.gnomon"), Overwrite::kNo).ok());
  for (const char* name : {"notes.txt", "short"}) {
    const Status s = CheckOutputPath(dir.File(name), Overwrite::kYes);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("is not a Gnomon trace, and only a trace is ever replaced") != std::string::npos);
  }
}
