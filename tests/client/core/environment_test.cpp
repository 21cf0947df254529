// What the program says it runs on and with (ProgramEnvironment).
#include "core/environment.h"

#include <doctest/doctest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "../../support/process.h"

using gnomon::client::ReadProgramEnvironment;

TEST_CASE("the environment: CPUs, memory, the system, the CPU's model and the GNOMON_ settings") {
  setenv("GNOMON_TEST_SETTING", "on", 1);
  setenv("NOT_GNOMON_SETTING", "off", 1);
  const auto info = ReadProgramEnvironment();
  CHECK(info.logical_cpus == uint32_t(sysconf(_SC_NPROCESSORS_ONLN)));
  CHECK(info.memory_bytes >= (uint64_t{64} << 20));
  utsname names{};
  REQUIRE(uname(&names) == 0);
  CHECK(info.system == std::string(names.sysname) + " " + names.release + " " + names.machine);
  CHECK(info.settings.find("GNOMON_TEST_SETTING=on") != std::string::npos);
  CHECK(info.settings.find("NOT_GNOMON") == std::string::npos);
  unsetenv("GNOMON_TEST_SETTING");
  unsetenv("NOT_GNOMON_SETTING");

  // The CPU's model: the first "model name" line, trimmed; none in the file, none said.
  gnomon::test::ScratchDir dir;
  std::ofstream(dir.File("cpuinfo"))
      << "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 3.00GHz  \n"
      << "processor\t: 1\nmodel name\t: Other\n";
  CHECK(ReadProgramEnvironment(dir.File("cpuinfo").c_str()).cpu == "Test CPU @ 3.00GHz");
  std::ofstream(dir.File("arm"))
      << "processor\t: 0\nBogoMIPS\t: 108.00\n\nModel\t\t: Raspberry Pi 4 Model B\n";
  CHECK(ReadProgramEnvironment(dir.File("arm").c_str()).cpu == "Raspberry Pi 4 Model B");
  CHECK(ReadProgramEnvironment(dir.File("missing").c_str()).cpu.empty());
}
