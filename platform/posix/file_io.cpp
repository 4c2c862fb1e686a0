// POSIX file I/O for the evidence (src/port/file_io.hpp). One file over 500
// lines: the checked write to a path a user named (from "a path a user
// named" on) ends in the same atomic write (write_atomic_at) as the
// records, so that both write the one way.
#include "port/file_io.hpp"

#include "posix/unique_fd.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/sysmacros.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
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
std::string temp_name(const std::string& target) {
  static std::atomic<unsigned long> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::string(k_temp_prefix) + target + "-" + std::to_string(::getpid()) + "-"
         + std::to_string(counter.fetch_add(1)) + "-"
         + std::to_string(static_cast<unsigned long long>(ticks) % 1000000007ULL);
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) {
    return name;
  }
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// What the rename into place may do to an entry already there.
enum class Existing { replace, keep };

// rename(2), or with Existing::keep a rename that fails (EEXIST) rather than
// replace whatever appeared under `name` since it was looked at.
int rename_into(int dir_fd, const std::string& temp, const std::string& name, Existing existing) {
#ifdef RENAME_NOREPLACE
  if (existing == Existing::keep) {
    const int done = ::renameat2(dir_fd, temp.c_str(), dir_fd, name.c_str(), RENAME_NOREPLACE);
    if (done == 0 || (errno != EINVAL && errno != ENOSYS)) {
      return done;
    }
    // A file system without RENAME_NOREPLACE: a hard link is just as
    // exclusive, and the temporary name goes afterwards.
    if (::linkat(dir_fd, temp.c_str(), dir_fd, name.c_str(), 0) != 0) {
      return -1;
    }
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return 0;
  }
#else
  (void)existing;
#endif
  return ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str());
}

// write_file_atomic's steps, in the directory `dir_fd` (named `dir` in
// messages): an exclusive temporary file, every write checked, optionally
// fsynced, renamed to `name`, and with `durable` the directory fsynced.
Result<void> write_atomic_at(int dir_fd, const std::string& dir, const std::string& name,
                             std::string_view content, bool durable, Existing existing) {
  const std::string path = join(dir, name);
  std::string temp;
  int raw_fd = -1;
  for (int attempt = 0; attempt < 16 && raw_fd < 0; ++attempt) {
    temp = temp_name(name);
    raw_fd =
        ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (raw_fd < 0 && errno != EEXIST) {
      return fail(errno_error(errno, "create " + join(dir, temp)));
    }
  }
  if (raw_fd < 0) {
    return fail(errno_error(EEXIST, "create " + join(dir, temp)));
  }
  Fd fd(raw_fd);
  // From here on, every failure removes the temporary file.
  auto abandon = [&](Error error) {
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return fail(std::move(error));
  };
  if (auto written = write_all(fd.get(), content, join(dir, temp)); !written) {
    return abandon(written.error());
  }
  // The data must be on disk before the rename makes it visible under the
  // real name, or a crash could leave an empty file where a record was.
  if (durable && ::fsync(fd.get()) != 0) {
    return abandon(errno_error(errno, "fsync " + join(dir, temp)));
  }
  if (fd.close_checked() != 0) {
    return abandon(errno_error(errno, "close " + join(dir, temp)));
  }
  if (rename_into(dir_fd, temp, name, existing) != 0) {
    return abandon(errno_error(errno, "rename " + join(dir, temp) + " to " + path));
  }
  if (!durable) {
    return {};
  }
  // The rename itself is durable only once the directory is.
  if (::fsync(dir_fd) != 0) {
    return fail(
        errno_error(errno, "fsync directory " + dir + " (" + path + " written but not durable)"));
  }
  return {};
}

// ---------------------------------------------------------------- a path a user named

// Where a name the user gave leads, found one component at a time from a
// directory descriptor (so no component can be swapped for a symlink behind
// the check): the directory holding the last component, its name there, and
// what it is.
struct UserTarget {
  platform::UniqueFd dir;
  std::string dir_label;  // for messages
  std::string name;
  bool exists = false;
  struct stat info {};         // lstat of dir/name, when it exists
  bool named_by_link = false;  // the last component came out of a symlink
  bool kernel_link = false;    // dir/name is a /proc link only the kernel can follow
};

constexpr int k_max_links = 40;  // as the kernel's limit (ELOOP)

std::deque<std::string> components(const std::string& path) {
  std::deque<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t slash = std::min(path.find('/', at), path.size());
    std::string part = path.substr(at, slash - at);
    if (!part.empty() && part != ".") {
      out.push_back(std::move(part));
    }
    at = slash + 1;
  }
  return out;
}

// Whether `entry`, found in the directory `dir_fd`, may have been planted
// there by another user: the directory is sticky and shared (world-writable;
// with `group_counts`, group-writable too) and the entry belongs neither to
// the caller nor to the directory's owner. Anyone may create names in /tmp;
// the sticky bit only stops them from removing others' names.
Result<bool> planted_in_sticky(int dir_fd, const std::string& dir_label, const struct stat& entry,
                               bool group_counts) {
  struct stat dir {};
  if (::fstat(dir_fd, &dir) != 0) {
    return fail(errno_error(errno, "stat " + dir_label));
  }
  const mode_t shared = group_counts ? (S_IWGRP | S_IWOTH) : S_IWOTH;
  const bool sticky_shared = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & shared) != 0;
  return sticky_shared && entry.st_uid != ::geteuid() && entry.st_uid != dir.st_uid;
}

// The kernel's fs.protected_symlinks rule, kept whatever the sysctl says: a
// symlink in a sticky, world-writable directory (/tmp) is followed only if
// the caller or the directory's owner owns it. Anyone can plant one there.
Result<void> check_link_owner(int dir_fd, const std::string& dir_label, const std::string& name,
                              const struct stat& link) {
  auto planted = planted_in_sticky(dir_fd, dir_label, link, false);
  if (!planted) {
    return fail(planted.error());
  }
  if (!*planted) {
    return {};
  }
  return fail(plain_error(join(dir_label, name) + ": a symlink owned by uid "
                          + std::to_string(link.st_uid) + " in the sticky directory " + dir_label
                          + ": not followed (only its owner's or the directory owner's are)"));
}

// The kernel's fs.protected_fifos=2 and fs.protected_regular=2 rules, kept
// whatever the sysctls say: an existing FIFO or regular file in a sticky
// directory writable by group or others is written (or replaced) only if
// the caller or the directory's owner owns it. Another user's FIFO there
// is a reader root would hand the report to; another user's file, a name
// they chose for root to write.
Result<void> check_entry_owner(int dir_fd, const std::string& dir_label, const std::string& name,
                               const struct stat& entry) {
  if (!S_ISFIFO(entry.st_mode) && !S_ISREG(entry.st_mode)) {
    return {};
  }
  auto planted = planted_in_sticky(dir_fd, dir_label, entry, true);
  if (!planted) {
    return fail(planted.error());
  }
  if (!*planted) {
    return {};
  }
  return fail(plain_error(join(dir_label, name) + ": "
                          + (S_ISFIFO(entry.st_mode) ? "a FIFO" : "a file") + " owned by uid "
                          + std::to_string(entry.st_uid) + " in the sticky directory " + dir_label
                          + ": not written (only its owner's or the directory owner's are)"));
}

bool on_procfs(int dir_fd) {
#ifdef PROC_SUPER_MAGIC
  struct statfs fs {};
  return ::fstatfs(dir_fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
#else
  (void)dir_fd;
  return false;
#endif
}

Result<std::string> read_link_at(int dir_fd, const std::string& name, const std::string& label) {
  std::string target(4096, '\0');
  const ssize_t length = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
  if (length < 0) {
    return fail(errno_error(errno, "read symlink " + label));
  }
  if (static_cast<std::size_t>(length) >= target.size()) {
    return fail(errno_error(ENAMETOOLONG, "read symlink " + label));
  }
  target.resize(static_cast<std::size_t>(length));
  return target;
}

Result<platform::UniqueFd> open_dir_at(int dir_fd, const std::string& name,
                                       const std::string& label) {
  const int fd = ::openat(dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno_error(errno, "open directory " + label));
  }
  return platform::UniqueFd(fd);
}

// Walks `path` as the kernel would, but checks every symlink on the way
// (check_link_owner) and stops before the last component.
Result<UserTarget> resolve_user_path(const std::string& path) {
  UserTarget target;
  const bool absolute = !path.empty() && path.front() == '/';
  target.dir_label = absolute ? "/" : "";
  {
    auto start = open_dir_at(AT_FDCWD, absolute ? "/" : ".", absolute ? "/" : ".");
    if (!start) {
      return fail(start.error());
    }
    target.dir = std::move(*start);
  }
  if (path.empty()) {
    return fail(plain_error("the path is empty"));
  }
  std::deque<std::string> pending = components(path);
  if (pending.empty() || path.back() == '/') {
    // "", ".", "/", "dir/": a directory, whatever is there now.
    return fail(plain_error(path + ": names a directory, not a file"));
  }
  int links = 0;
  while (!pending.empty()) {
    std::string name = std::move(pending.front());
    pending.pop_front();
    const bool last = pending.empty();
    const std::string label = join(target.dir_label, name);
    struct stat info {};
    if (::fstatat(target.dir.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT && last) {
        target.name = std::move(name);
        return target;
      }
      return fail(errno_error(errno, (last ? "stat " : "directory ") + label));
    }
    if (S_ISLNK(info.st_mode)) {
      TG_TRY(check_link_owner(target.dir.get(), target.dir_label, name, info));
      if (++links > k_max_links) {
        return fail(errno_error(ELOOP, "resolve " + path));
      }
      if (last && on_procfs(target.dir.get())) {
        // /proc/self/fd/1 names an open file (a pipe, a deleted file), not
        // a path: only the kernel can follow it.
        target.name = std::move(name);
        target.exists = true;
        target.info = info;
        target.kernel_link = true;
        return target;
      }
      auto text = read_link_at(target.dir.get(), name, label);
      if (!text) {
        return fail(text.error());
      }
      target.named_by_link = target.named_by_link || last;
      std::deque<std::string> more = components(*text);
      pending.insert(pending.begin(), more.begin(), more.end());
      if (!text->empty() && text->front() == '/') {
        auto root = open_dir_at(AT_FDCWD, "/", "/");
        if (!root) {
          return fail(root.error());
        }
        target.dir = std::move(*root);
        target.dir_label = "/";
      }
      if (pending.empty()) {
        return fail(plain_error(label + ": a symlink to a directory"));
      }
      continue;
    }
    if (last) {
      target.name = std::move(name);
      target.exists = true;
      target.info = info;
      return target;
    }
    auto next = open_dir_at(target.dir.get(), name, label);
    if (!next) {
      return fail(next.error());
    }
    target.dir = std::move(*next);
    target.dir_label = label;
  }
  return fail(plain_error(path + ": is a directory"));
}

bool is_terminal_device(dev_t device) {
#ifdef __linux__
  // tty0-63 and serial consoles (4), /dev/tty and /dev/console (5: 0, 1),
  // pseudo-terminals (136-143)
  const unsigned int major_number = major(device);
  const unsigned int minor_number = minor(device);
  return major_number == 4 || (major_number == 5 && minor_number <= 1)
         || (major_number >= 136 && major_number <= 143);
#else
  (void)device;
  return false;
#endif
}

bool is_dev_null(dev_t device) {
#ifdef __linux__
  return major(device) == 1 && minor(device) == 3;
#else
  struct stat null_info {};
  return ::stat("/dev/null", &null_info) == 0 && null_info.st_rdev == device;
#endif
}

// What a report may be written into without replacing it: a FIFO (or a
// pipe), /dev/null, a terminal, and (through /proc/self/fd/N only) an open
// regular file. Never a block device, a socket, a directory, or another
// character device (/dev/mem, a watchdog, a tape: opening some acts).
Result<void> check_in_place_type(const struct stat& info, const std::string& label,
                                 bool regular_allowed) {
  const mode_t type = info.st_mode & S_IFMT;
  if (type == S_IFIFO || (type == S_IFREG && regular_allowed)) {
    return {};
  }
  if (type == S_IFCHR && (is_dev_null(info.st_rdev) || is_terminal_device(info.st_rdev))) {
    return {};
  }
  const char* what = type == S_IFBLK    ? "a block device"
                     : type == S_IFCHR  ? "a character device other than /dev/null or a terminal"
                     : type == S_IFSOCK ? "a socket"
                     : type == S_IFDIR  ? "a directory"
                                        : "not a file a report can be written to";
  return fail(plain_error(label + ": is " + std::string(what) + "; not written"));
}

// How long a reader (a FIFO's, a terminal's) may keep a report waiting:
// treeguard's outcome is delivered after it, so the wait is bounded.
constexpr std::chrono::milliseconds k_in_place_write_limit{5000};

// write_all on a non-blocking descriptor, giving up once the reader has kept
// it waiting k_in_place_write_limit in all.
Result<void> write_bounded(int fd, std::string_view content, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + k_in_place_write_limit;
  while (!content.empty()) {
    const ssize_t written = ::write(fd, content.data(), content.size());
    if (written > 0) {
      content.remove_prefix(static_cast<std::size_t>(written));
      continue;
    }
    if (written == 0) {
      return fail(errno_error(ENOSPC, "write " + what));
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return fail(errno_error(errno, "write " + what));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return fail(plain_error("write " + what + ": its reader took nothing for "
                              + std::to_string(k_in_place_write_limit.count() / 1000)
                              + " s; the rest of the report is dropped"));
    }
    struct pollfd wait {
      fd, POLLOUT, 0
    };
    ::poll(&wait, 1, static_cast<int>(left.count()));
  }
  return {};
}

// How a target that passed check_user_target() is written.
enum class WriteWay {
  in_place,  // opened and written where it is: a FIFO, /dev/null, a terminal, /proc/self/fd/N
  replace,   // a regular file, replaced atomically where it is
  create,    // a new name, created atomically, never over an entry that appeared meanwhile
};

struct CheckedTarget {
  UserTarget target;
  WriteWay way = WriteWay::create;
  struct stat checked {};  // in place: what is to be opened (a /proc link: what it leads to)
};

// Every refusal of write_file_for_user, made on the path as it is now, and
// how it would be written. The one judge of a user's path: the check before
// the run (check_file_for_user) and the write after it both ask it.
Result<CheckedTarget> check_user_target(const std::string& path) {
  CheckedTarget out;
  {
    auto target = resolve_user_path(path);
    if (!target) {
      return fail(target.error());
    }
    out.target = std::move(*target);
  }
  const UserTarget& target = out.target;
  const std::string label = path;
  if (target.exists && !target.kernel_link) {
    TG_TRY(check_entry_owner(target.dir.get(), target.dir_label, target.name, target.info));
  }
  if (target.kernel_link || (target.exists && !S_ISREG(target.info.st_mode))) {
    // Renaming over /dev/null (as root) would replace it for everyone; a
    // FIFO replaced by a file never reaches its reader.
    out.way = WriteWay::in_place;
    out.checked = target.info;
    if (target.kernel_link) {
      if (::fstatat(target.dir.get(), target.name.c_str(), &out.checked, 0) != 0) {
        return fail(errno_error(errno, "stat " + label));
      }
      if (S_ISDIR(out.checked.st_mode)) {
        // treeguard holds a descriptor its caller closed with one of /.
        return fail(plain_error(label
                                + ": a descriptor that is closed or open on a directory; "
                                  "not written"));
      }
    }
    // A regular file open on a descriptor: appended to, never truncated
    // (`>> log`, or output COMMAND shares); only through a /proc link.
    TG_TRY(check_in_place_type(out.checked, label, target.kernel_link));
    return out;
  }
  if (!target.exists && target.named_by_link) {
    // Creating what a dangling symlink points to is how a planted link
    // makes root write where it did not mean to; replacing the link is not
    // what was asked either.
    return fail(plain_error(label + ": a symlink to " + join(target.dir_label, target.name)
                            + ", which does not exist; not followed, not replaced"));
  }
  out.way = target.exists ? WriteWay::replace : WriteWay::create;
  return out;
}

// Opens dir/name (following it only if it is a /proc link) and writes in
// place, after checking that what was opened is what was checked.
Result<void> write_in_place(const CheckedTarget& checked_target, std::string_view content,
                            const std::string& label) {
  const UserTarget& target = checked_target.target;
  const struct stat& checked = checked_target.checked;
  int flags = O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (!target.kernel_link) {
    flags |= O_NOFOLLOW;
  } else if (S_ISREG(checked.st_mode)) {
    flags |= O_APPEND;
  }
  // O_NONBLOCK: a FIFO without a reader fails at once (ENXIO).
  Fd fd(::openat(target.dir.get(), target.name.c_str(), flags));
  if (fd.get() < 0) {
    return fail(errno_error(errno, "open " + label));
  }
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0) {
    return fail(errno_error(errno, "stat " + label));
  }
  if (opened.st_dev != checked.st_dev || opened.st_ino != checked.st_ino
      || (opened.st_mode & S_IFMT) != (checked.st_mode & S_IFMT)) {
    return fail(plain_error(label + ": changed while it was opened; not written"));
  }
  TG_TRY(write_bounded(fd.get(), content, label));
  if (fd.close_checked() != 0) {
    return fail(errno_error(errno, "close " + label));
  }
  return {};
}

// Whether a file can be created in the directory `dir_fd`: one is, under a
// temporary name (exclusively, never through a symlink), and removed at
// once. Read-only file systems, permissions, a full inode table all show.
Result<void> probe_create_at(int dir_fd, const std::string& dir_label, const std::string& name) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string temp = temp_name(name);
    const int fd =
        ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlinkat(dir_fd, temp.c_str(), 0);
      return {};
    }
    if (errno != EEXIST) {
      return fail(errno_error(errno, "create a file in " + (dir_label.empty() ? "." : dir_label)));
    }
  }
  return fail(errno_error(EEXIST, "create a file in " + (dir_label.empty() ? "." : dir_label)));
}

}  // namespace

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               bool durable) {
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    return fail(
        errno_error(errno, "open directory " + dir.string() + " to write " + path.string()));
  }
  return write_atomic_at(dir_fd.get(), dir.string(), path.filename().string(), content, durable,
                         Existing::replace);
}

Result<void> check_file_for_user(const std::filesystem::path& path) {
  auto checked = check_user_target(path.string());
  if (!checked) {
    return fail(checked.error());
  }
  if (checked->way == WriteWay::in_place) {
    // Not opened: a FIFO's reader would see the open and close as the end
    // of its input.
    return {};
  }
  return probe_create_at(checked->target.dir.get(), checked->target.dir_label,
                         checked->target.name);
}

Result<void> write_file_for_user(const std::filesystem::path& path, std::string_view content) {
  auto checked = check_user_target(path.string());
  if (!checked) {
    return fail(checked.error());
  }
  const UserTarget& target = checked->target;
  if (checked->way == WriteWay::in_place) {
    return write_in_place(*checked, content, path.string());
  }
  // A regular file is replaced where it really is (a symlink to it stays);
  // a new name is created, never over something that appeared meanwhile.
  return write_atomic_at(target.dir.get(), target.dir_label, target.name, content, false,
                         checked->way == WriteWay::replace ? Existing::replace : Existing::keep);
}

namespace {

// A regular file owned by the effective user, as `info` describes it.
Result<void> check_own_regular(const struct stat& info, const std::filesystem::path& path) {
  if (!S_ISREG(info.st_mode)) {
    return fail(plain_error(path.string() + ": is not a regular file"));
  }
  if (info.st_uid != ::geteuid()) {
    return fail(plain_error(path.string() + ": owned by uid " + std::to_string(info.st_uid)
                            + ", not " + std::to_string(::geteuid())));
  }
  return {};
}

}  // namespace

Result<void> check_own_regular_file(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    return fail(errno_error(errno, "stat " + path.string()));
  }
  if (S_ISLNK(info.st_mode)) {
    return fail(plain_error(path.string() + ": is a symlink"));
  }
  return check_own_regular(info, path);
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
  TG_TRY(check_own_regular(info, path));
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

DirectoryLock::DirectoryLock(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  int locked;
  do {
    locked = ::flock(fd, LOCK_EX);
  } while (locked != 0 && errno == EINTR);
  if (locked != 0) {
    ::close(fd);  // no such lock here (a file system without flock)
    return;
  }
  m_handle = fd;
}

DirectoryLock::~DirectoryLock() {
  if (m_handle >= 0) {
    ::close(m_handle);  // releases the lock
  }
}

std::optional<FileVersion> file_version(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return FileVersion{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                     static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000
                         + st.st_ctim.tv_nsec};
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
