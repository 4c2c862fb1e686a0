// File operations the evidence needs, with the guarantees spelled out.
// Declared here, defined per platform (platform/posix/file_io.cpp).
#pragma once

#include "result.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace treeguard {

// Prefix of the temporary files write_file_atomic() leaves in a directory
// while a write is in flight; readers of the directory skip them.
inline constexpr std::string_view k_temp_prefix = ".tmp-";

// Replace `path` with `content` atomically: a reader sees the old file or
// the new one, never a mix. Writes a temporary file in the same directory
// (created exclusively, mode 0600, never through a symlink), checks every
// write, and renames it over `path`. With `durable`, the temporary file is
// fsynced before the rename and the directory after it, so the new content
// survives a crash once this returns success.
//
// On failure the temporary file is removed and the Error carries errno
// (ENOSPC, EROFS, EIO, EDQUOT...) in its code. If only the directory's
// fsync failed, `path` already holds the new content but it is not known to
// be durable: the error says so, and the caller must not rely on it.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               bool durable);

// Write `content` to a file a user named (a report); as root this is a
// security boundary. The path is walked one component at a time: a symlink
// in a sticky, world-writable directory (/tmp) is followed only if the
// caller or the directory's owner owns it (the kernel's protected_symlinks
// rule, kept whatever the sysctl says). Then:
//  - a regular file is replaced atomically where it is (a symlink to it
//    stays a symlink); a new name is created atomically, never over an entry
//    that appeared meanwhile; a dangling symlink is refused (neither
//    followed nor replaced);
//  - a FIFO, /dev/null or a terminal is opened (not following a symlink
//    there, O_NONBLOCK) and written in place; /proc/self/fd/N (/dev/stdout)
//    is followed by the kernel, and a regular file open there is appended to;
//  - a block device, a socket, a directory or any other character device is
//    refused.
// A FIFO without a reader is an error (ENXIO), not a wait; a reader that
// takes nothing keeps it at most 5 s in all, then it is an error.
Result<void> write_file_for_user(const std::filesystem::path& path, std::string_view content);

// Whether write_file_for_user(path) could write there now, asked before the
// work that produces the content starts (--report is checked before COMMAND
// runs): the same walk and every one of its refusals, plus, for a file to
// be created or replaced, a file created in its directory under a temporary
// name and removed at once (a read-only file system, a directory the caller
// may not write). Nothing that stays is created; a FIFO, a terminal or
// /dev/null is not opened (a FIFO's reader would take the open and close for
// the end of its input). The path is judged again when it is written.
Result<void> check_file_for_user(const std::filesystem::path& path);

// Read a file that anyone might have planted: refuses a symlink (as the
// final component), anything but a regular file, a file not owned by the
// effective user or writable by group or others, and one larger than
// `max_bytes`. Never blocks on a FIFO.
Result<std::string> read_file_untrusted(const std::filesystem::path& path, std::size_t max_bytes);

// Whether `path` itself is a regular file owned by the effective user: a
// symlink is refused, never followed; so is anything but a regular file.
Result<void> check_own_regular_file(const std::filesystem::path& path);

// Remove `path` (not following a symlink). Missing already counts as done.
Result<void> remove_file(const std::filesystem::path& path);

// An exclusive lock on a directory, held until the object goes: the
// writers of a record that two processes write (a run's controller, and its
// guardian writing the records of the runs nested in it) take it around
// each read-and-write. Where the file system has no such lock, or on
// Windows (no record there is written by two), the object holds none.
class DirectoryLock {
public:
  explicit DirectoryLock(const std::filesystem::path& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  // Whether the lock is held.
  bool held() const { return m_handle >= 0; }

private:
  int m_handle = -1;
};

// Which version of a file `path` is (its inode, size and change time), to
// tell whether anyone replaced it since; nullopt when it is not there.
struct FileVersion {
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t changed_ns = 0;
  bool operator==(const FileVersion& other) const {
    return inode == other.inode && size == other.size && changed_ns == other.changed_ns;
  }
  bool operator!=(const FileVersion& other) const { return !(*this == other); }
};
std::optional<FileVersion> file_version(const std::filesystem::path& path);

// Who is acting, as records name it: "uid 1000" (POSIX), "sid ..." elsewhere.
std::string current_user_label();

}  // namespace treeguard
