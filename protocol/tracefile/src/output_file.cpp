#include "gnomon/tracefile/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gnomon/tracefile/format.h"

namespace gnomon::tracefile {
namespace {

std::string Describe(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string LinkTarget(const std::string& path) {
  char target[4096];
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  return n > 0 ? std::string(target, size_t(n)) : "?";
}

// Whether the regular file at `path` is a trace (it starts as one, or is empty: nothing
// in it to lose), read without following a link or waiting on a FIFO.
bool HoldsATrace(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[sizeof(kTraceMagic)] = {};
  const ssize_t n = read(fd, magic, sizeof(magic));
  close(fd);
  return n == 0 || (n == ssize_t(sizeof(magic)) && std::memcmp(magic, kTraceMagic, sizeof(magic)) == 0);
}

// This machine's name, as temporary file names carry it ("" when it has none).
std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

// A temporary file's name beside `path`: PATH.partial-PID-RANDOM-HOST.
std::string TemporaryName(const std::string& path, unsigned random) {
  char middle[48];
  std::snprintf(middle, sizeof(middle), ".partial-%d-%06x-", int(getpid()), random & 0xFFFFFF);
  return path + middle + HostName();
}

// A writer killed mid-write leaves its temporary file no one else removes.
constexpr auto kStaleAfter = std::chrono::seconds(60);

// Removes the temporary files (TemporaryName) that a writer of `path` killed mid-write
// left beside it: this user's, made on this machine by a process that is gone, and not
// written to for a minute. A pid that lives again in another process keeps its file,
// which is only a leftover, never a loss; so does a file another machine made on a
// shared folder, whose pid means nothing here.
void RemoveStaleTemporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".partial-";
  const std::string host = HostName();
  DIR* listing = opendir(folder.c_str());
  if (listing == nullptr) return;
  const auto now = std::chrono::system_clock::now();
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (!name.starts_with(prefix)) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-' || pid == long(getpid())) continue;
    const size_t host_at = name.find('-', size_t(end - name.c_str()) + 1);
    if (host_at == std::string::npos || name.substr(host_at + 1) != host) continue;
    struct stat st {};
    if (fstatat(dirfd(listing), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid()) {
      continue;
    }
    const auto written = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
    if (now - written < kStaleAfter) continue;
    if (kill(pid_t(pid), 0) != 0 && errno == ESRCH) unlinkat(dirfd(listing), name.c_str(), 0);
  }
  closedir(listing);
}

}  // namespace

Status CheckOutputPath(const std::string& path, Overwrite overwrite) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::Error("cannot check " + path + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return Status::Error(path + " is a symbolic link (to " + LinkTarget(path) +
                         "); name the file itself, or another path");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::Error(path + " is " + Describe(st.st_mode) + ", not a trace file; choose another path");
  }
  if (overwrite == Overwrite::kNo) {
    return Status::Error(path + " already exists; choose another name or allow overwriting (-f)");
  }
  if (!HoldsATrace(path)) {
    return Status::Error(path +
                         " is not a Gnomon trace, and only a trace is ever replaced; choose another "
                         "path, or remove it first");
  }
  return Status::Ok();
}

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path) {
  RemoveStaleTemporaries(path);
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string temp = TemporaryName(path, unsigned(random()));
    // O_EXCL with O_CREAT never follows a link: a name someone planted fails instead.
    const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return Status::Error("cannot create a file beside " + path + ": " + std::strerror(errno));
    std::FILE* file = fdopen(fd, "wb");
    if (file == nullptr) {
      const int error = errno;
      close(fd);
      unlink(temp.c_str());
      return Status::Error("cannot write " + temp + ": " + std::strerror(error));
    }
    return std::unique_ptr<OutputFile>(new OutputFile(file, path, std::move(temp)));
  }
  return Status::Error("cannot create a file beside " + path + ": every temporary name tried exists");
}

OutputFile::~OutputFile() {
  Close();
  if (!published_) unlink(temp_path_.c_str());
}

Status OutputFile::Close() {
  if (file_ == nullptr) return Status::Ok();
  int error = std::fflush(file_) == 0 ? 0 : errno;
  if (std::fclose(file_) != 0 && error == 0) error = errno;
  file_ = nullptr;
  if (error != 0) return Status::Error("cannot write " + current_path() + ": " + std::strerror(error));
  return Status::Ok();
}

Status OutputFile::Publish(Overwrite overwrite) {
  if (published_) return Status::Ok();
  const auto kept = [&](const std::string& why) {
    return Status::Error(why + "; what was written is kept in " + temp_path_);
  };
  // (The file is renamed as it is: another thread may be writing to it.)
  if (Status s = CheckOutputPath(path_, overwrite); !s.ok()) return kept(s.message());
  int result = 0;
  if (overwrite == Overwrite::kYes) {
    result = std::rename(temp_path_.c_str(), path_.c_str());  // replaces a regular file in one step
  } else {
    // Never replaces what appeared at `path` since the check.
    result = renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
    if (result != 0 && (errno == EINVAL || errno == ENOSYS)) {  // a file system without it
      result = link(temp_path_.c_str(), path_.c_str());
      if (result == 0) unlink(temp_path_.c_str());
    }
  }
  if (result != 0) {
    if (errno == EEXIST)
      return kept(path_ + " appeared meanwhile; choose another name or allow overwriting (-f)");
    return kept("cannot move the file to " + path_ + ": " + std::strerror(errno));
  }
  published_ = true;
  return Status::Ok();
}

Status CopyFileBytes(const std::string& from, uint64_t bytes, OutputFile& out) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (in == nullptr) return Status::Error("cannot read " + from + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(in), &st) == 0) bytes = std::min(bytes, uint64_t(st.st_size));
  Status status = CopyFileBytes(in, from, bytes, out);
  std::fclose(in);
  return status;
}

Status CopyFileBytes(std::FILE* in, const std::string& from, uint64_t bytes, OutputFile& out) {
  std::vector<char> buffer(1 << 20);
  Status status = Status::Ok();
  while (bytes > 0) {
    const size_t n = std::fread(buffer.data(), 1, size_t(std::min<uint64_t>(bytes, buffer.size())), in);
    if (n == 0) {
      status = Status::Error(std::ferror(in) ? "cannot read " + from + ": " + std::strerror(errno)
                                             : from + " ended " + std::to_string(bytes) + " bytes early");
      break;
    }
    if (std::fwrite(buffer.data(), 1, n, out.file()) != n) {
      status = Status::Error("cannot write " + out.current_path() + ": " + std::strerror(errno));
      break;
    }
    bytes -= n;
  }
  return status;
}

}  // namespace gnomon::tracefile
