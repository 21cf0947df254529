// Outside projects find the installed package and link gnomon::client: a C++ one (and a
// program written for Tracy, with gnomon::tracy), and a C-only one (also against
// gnomon::client_shared). And the build keeps the dependency rule between components.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>

#include "../support/process.h"

using gnomon::test::RunCommand;

TEST_CASE("find_package(Gnomon) and gnomon::client work from an install tree, for C++ and C-only projects") {
  gnomon::test::ScratchDir dir;
  const std::string prefix = dir.File("prefix");
  std::string output;
  REQUIRE_MESSAGE(RunCommand("cmake --install " GNOMON_BINARY_DIR " --prefix " + prefix, &output) == 0,
                  output);
  // The tools and the demos install with the library.
  for (const char* tool : {"gnomon-capture", "gnomon-report", "gnomon-merge", "gnomon-cut", "gnomon-demo",
                           "gnomon-bench", "gnomon-calibration-bench"}) {
    CAPTURE(tool);
    CHECK(std::filesystem::exists(prefix + "/bin/" + tool));
  }
  // Configures and builds an outside project against the install, with this build's
  // sanitizer flags for its language (CXX or C).
  const std::string flags = GNOMON_SANITIZE_FLAGS;
  auto build = [&](const std::string& source, const std::string& name, const std::string& language) {
    const std::string configure = "cmake -S " + source + " -B " + dir.File(name) +
                                  " -DCMAKE_PREFIX_PATH=" + prefix + " -DCMAKE_BUILD_TYPE=Release" +
                                  (flags.empty() ? ""
                                                 : " -DCMAKE_" + language + "_FLAGS='" + flags +
                                                       "' -DCMAKE_EXE_LINKER_FLAGS='" + flags + "'");
    REQUIRE_MESSAGE(RunCommand(configure, &output) == 0, output);
    REQUIRE_MESSAGE(RunCommand("cmake --build " + dir.File(name), &output) == 0, output);
  };
  build(GNOMON_CONSUMER_DIR, "consumer", "CXX");
  REQUIRE_MESSAGE(RunCommand("GNOMON_PORT=0 " + dir.File("consumer/consumer"), &output) == 0, output);
  CHECK(output.find("consumer recorded") != std::string::npos);
  // gnomon::tracy: Tracy's headers from the install, TRACY_ENABLE defined by the target.
  REQUIRE_MESSAGE(RunCommand("GNOMON_PORT=0 " + dir.File("consumer/consumer_tracy"), &output) == 0, output);
  CHECK(output.find("tracy consumer recorded with TRACY_ENABLE") != std::string::npos);

  // A C-only project (no C++ compiler enabled), with the static and the shared library.
  build(GNOMON_CONSUMER_C_DIR, "consumer_c", "C");
  for (const char* program : {"consumer_c/consumer_c", "consumer_c/consumer_c_shared"}) {
    CAPTURE(program);
    REQUIRE_MESSAGE(RunCommand("GNOMON_PORT=0 " + dir.File(program), &output) == 0, output);
    CHECK(output.find("c consumer recorded, now ticking") != std::string::npos);
  }
}

TEST_CASE("a link against the dependency rule stops the configure, naming both ends") {
  gnomon::test::ScratchDir dir;
  std::string output;
  // The server linking the client: server/ may link only protocol/ and itself.
  const int code =
      RunCommand("cmake -S " GNOMON_SOURCE_DIR " -B " + dir.File("breach") +
                     " -DGNOMON_BUILD_TESTS=OFF -DGNOMON_TEST_DEPENDENCY_BREACH=gnomon_server:gnomon_client",
                 &output);
  CHECK(code != 0);
  std::string said;  // CMake wraps its messages: one space for each run of white space
  for (const char c : output) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      said += c;
    } else if (!said.empty() && said.back() != ' ') {
      said += ' ';
    }
  }
  CHECK_MESSAGE(said.find("gnomon_server (server/) links gnomon_client (client/): the dependency rule allows "
                          "server/ to link only protocol/, server/") != std::string::npos,
                output);
}
