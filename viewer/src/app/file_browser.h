// File > Open and File > Compare with: a small file browser. The recent trace files come
// first; below them, the folder's sub-folders and .gnomon files; a path can be typed.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gnomon::viewer {

class FileBrowser {
 public:
  // Opens the browser as a modal titled `title`; `chosen` gets the path picked.
  void Open(const std::string& title, std::function<void(const std::string&)> chosen);
  // Draws it while it is open; call every frame.
  void Draw(const std::vector<std::string>& recent);

 private:
  void List();

  std::string title_;
  std::function<void(const std::string&)> chosen_;
  bool opening_ = false;
  std::string folder_;
  std::vector<std::string> folders_, files_;
  char path_[1024] = "";
};

}  // namespace gnomon::viewer
