// An outside project finds the installed package and links gnomon::client.
#include <doctest/doctest.h>

#include "../support/process.h"

using gnomon::test::RunCommand;

TEST_CASE("find_package(Gnomon) and gnomon::client work from an install tree") {
  gnomon::test::ScratchDir dir;
  const std::string prefix = dir.File("prefix");
  std::string output;
  REQUIRE_MESSAGE(RunCommand("cmake --install " GNOMON_BINARY_DIR " --prefix " + prefix, &output) == 0,
                  output);
  const std::string flags = GNOMON_SANITIZE_FLAGS;
  const std::string configure =
      "cmake -S " GNOMON_CONSUMER_DIR " -B " + dir.File("consumer") + " -DCMAKE_PREFIX_PATH=" + prefix +
      " -DCMAKE_BUILD_TYPE=Release" +
      (flags.empty() ? "" : " -DCMAKE_CXX_FLAGS='" + flags + "' -DCMAKE_EXE_LINKER_FLAGS='" + flags + "'");
  REQUIRE_MESSAGE(RunCommand(configure, &output) == 0, output);
  REQUIRE_MESSAGE(RunCommand("cmake --build " + dir.File("consumer"), &output) == 0, output);
  REQUIRE_MESSAGE(RunCommand("GNOMON_PORT=0 " + dir.File("consumer/consumer"), &output) == 0, output);
  CHECK(output.find("consumer recorded") != std::string::npos);
}
