// Reading processes from /proc. The one definition of "alive" used by
// verification, reports, the guardian, sweep and the dispatch gate lives
// here (DESIGN.md [liveness]): ProcStat::alive(), and process_alive() for an
// identity.
#pragma once

#include "census.hpp"
#include "identity.hpp"
#include "result.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard::platform {

// The fields of /proc/PID/stat treeguard uses.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // R S D Z T t X ...
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  long threads = 1;  // threads not yet released (field 20)
  // Clock ticks after boot (field 22), as the initial time namespace counts
  // them (host_start_time()): identities compare across time namespaces.
  unsigned long long start_time = 0;
  // The leader thread has exited while other threads live: `state` is
  // theirs (read_proc_stat()).
  bool leader_exited = false;
  std::string comm;  // field 2, as the kernel has it (at most 15 bytes)

  // THE liveness rule (DESIGN.md [liveness]): a process is alive until its
  // whole thread group is gone. A zombie (Z, X) whose threads have all
  // exited is dead: it holds no resources and runs no code. A leader that
  // called pthread_exit shows Z while its other threads run: read_proc_stat()
  // gives such a process the state of its live threads, so it is alive here,
  // walked, signalled (a signal to the pid reaches the whole group) and
  // reported like any other member.
  bool alive() const { return state != 'Z' && state != 'X' && state != 'x'; }
  // Stopped by a signal (T) or by a tracer (t): every live thread is.
  bool stopped() const { return state == 'T' || state == 't'; }
  // Cannot run user code, hence cannot fork: stopped, or in uninterruptible
  // sleep (D: a vfork parent, a process in the kernel), which returns to
  // user space only through a pending stop or kill signal.
  bool held() const { return stopped() || state == 'D'; }

  // What the census rules (census.hpp) read of it.
  ProcessFacts facts() const { return {pid, start_time, ppid, pgid, sid, alive()}; }
};

// Parse one /proc/PID/stat line; the command name may hold spaces and ')'.
// The state is the leader thread's (see read_proc_stat()).
std::optional<ProcStat> parse_proc_stat(const std::string& text);

// A start time as /proc/PID/stat shows it to this process, as the initial
// time namespace counts it: the kernel adds the reader's time namespace's
// boottime offset (/proc/self/timens_offsets), which this takes off again,
// so that a record written in one time namespace names the same processes
// in every other (exact where the offset is whole clock ticks, as `unshare
// --boottime SECONDS` makes it).
unsigned long long host_start_time(unsigned long long seen);

// The start time a process started now would show (host_start_time()'s
// count): every process started after this call shows this or a later one.
unsigned long long start_time_now();

// Read /proc/PID/stat (its start time by host_start_time()); nullopt if
// the process is gone. When the leader
// thread has exited (Z) while other threads live, the state is theirs: the
// first one neither stopped nor dead, else stopped (T) if any is, else Z.
std::optional<ProcStat> read_proc_stat(pid_t pid);

// Call `line` with each line of the /proc file at `path` (without its
// newline), read in chunks as the kernel makes it, until `line` returns
// false or `max_bytes` have been read (a table of a busy host: /proc/net/tcp
// of 100,000 connections is megabytes the caller may not need). False when
// the file cannot be opened.
bool for_each_proc_line(const char* path, std::size_t max_bytes,
                        const std::function<bool(std::string_view)>& line);

// A process's arguments (/proc/PID/cmdline) joined by spaces, as
// name_text() keeps them, at most `limit` bytes; "" when unreadable or
// empty (a zombie). What it says is what the process shows now: between
// fork and exec, its parent's.
std::string read_arguments(pid_t pid, std::size_t limit);

// Whether read_arguments() may be asked of the process `stat` shows without
// waiting on it. Reading /proc/PID/cmdline takes the process's memory-map
// lock, which the process holds while it forks or faults pages in: a fork
// bomb holds it nearly all the time (a controller reading its members'
// arguments took a minute past the deadline to kill one), a fault on a
// hung file system for good. Only a process seen asleep (S) or stopped,
// alone in its thread group (another thread may hold the lock), is read; a
// running (R) or D-state one is not, and is named by comm until a walk sees
// it so.
bool arguments_readable(const ProcStat& stat);

// Every process on the host, as far as /proc shows it now.
std::vector<ProcStat> list_processes();

// Every descendant of `root` (not `root` itself), zombies included. Walks
// /proc/PID/task/TID/children, so the cost follows the size of the tree,
// not of the host: two hundred runs at once under make -j must not each
// read every process on the machine. Falls back to a full scan where the
// kernel lacks those files. A process forking during the walk may be
// missed; callers that must be exact loop until an exact test holds.
std::vector<ProcStat> list_descendants(pid_t root);

// COMMAND's environment carries the run marker (identity.hpp's
// k_run_marker). After the controller is gone, the guardian and sweep find
// escapees that no walk recorded (setsid'd and double-forked ones,
// reparented away) by it. A process that exec'd with a scrubbed
// environment loses it: that is a named residual.

// Whether /proc/PID/environ names `run_id` in TREEGUARD_RUNS; `unreadable`
// when the environment cannot be read (another user's process, or one that
// is not dumpable: a set-id program, ssh-agent).
Marker read_run_marker(pid_t pid, const std::string& run_id);

// The real uid of a process (/proc/PID/status), nullopt if it is gone.
std::optional<uid_t> real_uid(pid_t pid);

// The process (pid, start_time) is alive: a process with this pid exists,
// its start time is the one recorded (so a recycled pid is not it), and it
// is alive as ProcStat::alive() says.
bool process_alive(pid_t pid, unsigned long long start_time);

// The process is a systemd service manager: the system manager (pid 1 of
// this namespace) or a user's (a child of pid 1), named "systemd". Such a
// sender of a signal is taking down the unit it sends to.
bool is_service_manager(pid_t pid);

// Pid namespaces, as records name them (RunRecord::pid_ns, pid_ns_init):
// the inode of /proc/PID/ns/pid, and when the namespace's init started.
// This process's namespace's inode; 0 if unknown.
std::uint64_t own_pid_namespace();
// When this process's namespace's init started; nullopt when /proc is not
// this namespace's own (its pid 1 would be another namespace's init).
std::optional<unsigned long long> own_pid_namespace_init();
// The initial pid namespace's inode (the kernel's PROC_PID_INIT_INO): from
// it, every process of the host is seen.
inline constexpr std::uint64_t k_initial_pid_namespace = 0xEFFFFFFCULL;
// The pid namespace `inode`, whose init started at `init` (if known), is
// proven gone: looking from the initial namespace with a /proc of its own,
// no process is in it, or the namespace holding that inode now has another
// init. False when that cannot be told (another namespace, a process that
// cannot be inspected).
bool pid_namespace_gone(std::uint64_t inode, std::optional<unsigned long long> init);

// The kernel's boot id (/proc/sys/kernel/random/boot_id), "" if unreadable.
std::string boot_id();

// The machine id in the file at `path` (32 lowercase hex digits, as
// systemd-machine-id-setup and dbus-uuidgen write it), "" if there is none
// or it is not one ("uninitialized" in a fresh image).
std::string machine_id_in(const char* path);

// This machine's id: /etc/machine-id, else D-Bus's /var/lib/dbus/machine-id
// (the same id where systemd runs; the only one on some hosts without it);
// "" if neither holds one (many chroots and containers).
std::string machine_id();

// When this boot began, in ns since the Unix epoch: the realtime clock
// minus the time since boot (suspend included).
std::int64_t boot_began_at();

// A pidfd for (pid, start_time), or an invalid fd when the process is gone
// or the pid now names another process. Sending through the pidfd can then
// never reach a recycled pid.
int open_verified_pidfd(pid_t pid, unsigned long long start_time);

// Send `signal` through a pidfd (pidfd_send_signal), 0 or an errno.
int pidfd_signal(int pidfd, int signal);

}  // namespace treeguard::platform
