// POSIX file I/O for the evidence (src/file_io.hpp).
#include "file_io.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>

namespace treeguard {

namespace {

// Closes the descriptor it holds, once; close() errors are read by
// close_checked() on the success path only.
class Fd {
public:
  explicit Fd(int fd) : m_fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  int get() const { return m_fd; }
  // close(2) can report a delayed write error (NFS, quota): it counts.
  int close_checked() {
    const int fd = m_fd;
    m_fd = -1;
    return ::close(fd);
  }

private:
  int m_fd;
};

Result<void> write_all(int fd, std::string_view content, const std::string& what) {
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail(errno_error(errno, "write " + what));
    }
    if (written == 0) {
      // Not an error by POSIX, but no progress either: treat as a full disk.
      return fail(errno_error(ENOSPC, "write " + what));
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
  return {};
}

// A name no other writer (process or thread) picks at the same time:
// pid, a per-process counter, and the clock. O_EXCL catches the rest.
std::string temp_name(const std::filesystem::path& target) {
  static std::atomic<unsigned long> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::string(k_temp_prefix) + target.filename().string() + "-" + std::to_string(::getpid())
         + "-" + std::to_string(counter.fetch_add(1)) + "-"
         + std::to_string(static_cast<unsigned long long>(ticks) % 1000000007ULL);
}

}  // namespace

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               bool durable) {
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::filesystem::path temp;
  int raw_fd = -1;
  for (int attempt = 0; attempt < 16 && raw_fd < 0; ++attempt) {
    temp = dir / temp_name(path);
    raw_fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (raw_fd < 0 && errno != EEXIST) {
      return fail(errno_error(errno, "create " + temp.string()));
    }
  }
  if (raw_fd < 0) {
    return fail(errno_error(EEXIST, "create " + temp.string()));
  }
  Fd fd(raw_fd);
  // From here on, every failure removes the temporary file.
  auto abandon = [&](Error error) {
    ::unlink(temp.c_str());
    return fail(std::move(error));
  };
  if (auto written = write_all(fd.get(), content, temp.string()); !written) {
    return abandon(written.error());
  }
  // The data must be on disk before the rename makes it visible under the
  // real name, or a crash could leave an empty file where a record was.
  if (durable && ::fsync(fd.get()) != 0) {
    return abandon(errno_error(errno, "fsync " + temp.string()));
  }
  if (fd.close_checked() != 0) {
    return abandon(errno_error(errno, "close " + temp.string()));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return abandon(errno_error(errno, "rename " + temp.string() + " to " + path.string()));
  }
  if (!durable) {
    return {};
  }
  // The rename itself is durable only once the directory is.
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    return fail(
        errno_error(errno, "open directory " + dir.string() + " to fsync " + path.string()));
  }
  if (::fsync(dir_fd.get()) != 0) {
    return fail(errno_error(errno, "fsync directory " + dir.string() + " (" + path.string()
                                       + " written but not durable)"));
  }
  return {};
}

Result<void> write_file_for_user(const std::filesystem::path& path, std::string_view content) {
  struct stat info {};
  // stat, not lstat: /dev/stdout is a symlink to what matters.
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) {
    return write_file_atomic(path, content, false);
  }
  // Renaming over /dev/null (as root) would replace it for everyone; a FIFO
  // replaced by a file never reaches its reader. O_NONBLOCK: a FIFO without
  // a reader fails at once (ENXIO) rather than hanging the run's end.
  Fd fd(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    return fail(errno_error(errno, "open " + path.string()));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) {
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  }
  if (auto written = write_all(fd.get(), content, path.string()); !written) {
    return written;
  }
  if (fd.close_checked() != 0) {
    return fail(errno_error(errno, "close " + path.string()));
  }
  return {};
}

Result<std::string> read_file_untrusted(const std::filesystem::path& path, std::size_t max_bytes) {
  // O_NONBLOCK: a FIFO planted under a record's name must not hang us.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ELOOP) {
      return fail(plain_error(path.string() + ": is a symlink"));
    }
    return fail(errno_error(error, "open " + path.string()));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return fail(errno_error(errno, "stat " + path.string()));
  }
  if (!S_ISREG(info.st_mode)) {
    return fail(plain_error(path.string() + ": is not a regular file"));
  }
  if (info.st_uid != ::geteuid()) {
    return fail(plain_error(path.string() + ": owned by uid " + std::to_string(info.st_uid)
                            + ", not " + std::to_string(::geteuid())));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fail(plain_error(path.string() + ": is group- or world-writable"));
  }
  if (info.st_size < 0 || static_cast<unsigned long long>(info.st_size) > max_bytes) {
    return fail(
        plain_error(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes"));
  }
  std::string content;
  content.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[16384];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail(errno_error(errno, "read " + path.string()));
    }
    if (got == 0) {
      break;
    }
    // The file may grow after fstat: the limit holds for what is read.
    if (content.size() + static_cast<std::size_t>(got) > max_bytes) {
      return fail(
          plain_error(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes"));
    }
    content.append(buffer, static_cast<std::size_t>(got));
  }
  return content;
}

Result<void> remove_file(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return fail(errno_error(errno, "remove " + path.string()));
  }
  return {};
}

std::string current_user_label() {
  return "uid " + std::to_string(::geteuid());
}

}  // namespace treeguard
