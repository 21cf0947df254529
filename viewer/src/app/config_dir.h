// Where the viewer keeps what it remembers between runs (settings, recent files and
// addresses, Dear ImGui's window state): $XDG_CONFIG_HOME/gnomon, else ~/.config/gnomon.
#pragma once

#include <cstdlib>
#include <string>

namespace gnomon::viewer {

// The folder ("" when neither variable is set); not created here.
inline std::string ConfigDirectory() {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  if (config != nullptr && *config != '\0') return std::string(config) + "/gnomon";
  if (home != nullptr && *home != '\0') return std::string(home) + "/.config/gnomon";
  return "";
}

// `name` in that folder, or "" when there is none.
inline std::string ConfigFile(const std::string& name) {
  const std::string dir = ConfigDirectory();
  return dir.empty() ? "" : dir + "/" + name;
}

}  // namespace gnomon::viewer
