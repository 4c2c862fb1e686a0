#include "port/host.hpp"

#include "linux/proc.hpp"
#include "linux/scope_exec.hpp"
#include "linux/signals.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <link.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string_view>

namespace treeguard {

namespace {

constexpr std::uintptr_t k_page = 4096;

std::uintptr_t page_below(std::uintptr_t address) {
  return address & ~(k_page - 1);
}

// The program's pages in [start, end) put in its page table now (Linux 5.14
// and later; before, EINVAL, and they fault in one by one as ever).
void populate(std::uintptr_t start, std::uintptr_t end, int advice) {
  if (end > start) {
    ::madvise(reinterpret_cast<void*>(start), end - start, advice);
  }
}

// The first object dl_iterate_phdr reports is the program itself: its code
// and constants mapped, its data and zeroed data made its own, each segment
// in one call. The relocation-read-only part of the data is left as it is
// (glibc has made it read-only by now: a write there would fail). Stops after
// the program (returns 1).
int populate_program(struct dl_phdr_info* info, std::size_t /*size*/, void* /*data*/) {
  std::uintptr_t read_only_end = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type == PT_GNU_RELRO) {
      read_only_end = page_below(info->dlpi_addr + segment.p_vaddr + segment.p_memsz + k_page - 1);
    }
  }
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) {
      continue;
    }
    const std::uintptr_t start = page_below(info->dlpi_addr + segment.p_vaddr);
    const std::uintptr_t end = info->dlpi_addr + segment.p_vaddr + segment.p_memsz;
    if ((segment.p_flags & PF_W) != 0) {
      populate(std::max(start, read_only_end), end, MADV_POPULATE_WRITE);
    } else {
      populate(start, end, MADV_POPULATE_READ);
    }
  }
  return 1;
}

// A launcher's run is mostly a process's start, and a page fault is a trap:
// on a virtual machine 10-20 us each. treeguard's start faults at nearly
// every 64 KiB window of its text and at each page of data it first writes;
// mapping both, one call per segment, before the C++ static initialisers and
// main (priority 101: ahead of every other initialiser; glibc's own start,
// before it, still faults), takes treeguard's own faults in a nested run from
// 79 to 43 and its CPU time down by about 0.2 ms (3,000 interleaved runs,
// three times; either kind of segment alone measured no gain).
// DESIGN.md [cost].
__attribute__((constructor(101))) void populate_program_at_start() {
  ::dl_iterate_phdr(populate_program, nullptr);
}

// A caller may start treeguard with any of 0, 1 and 2 closed (cron, daemons,
// `>&-`). Whatever treeguard opened next would take those numbers: its
// messages would go into a record file, the guardian's pipe would sit where
// /dev/null goes. Each closed one is held, close-on-exec (COMMAND still finds
// it closed, as the caller gave it), by a path-only descriptor of "/": a read
// or write on it fails as on a closed one (EBADF), and what is opened through
// /proc/self/fd/N (`--report /dev/stdout`) is a directory, never a sink that
// swallows a report the caller meant for a descriptor it closed.
void hold_closed_stdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) {
      continue;
    }
    // The lowest free number: this one, as those below are open by now.
    const int held = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (held >= 0 && held != fd) {
      ::close(held);
    }
  }
}

// A process's arguments (/proc/PID/cmdline), word by word, the first 8 KiB;
// empty when unreadable.
std::vector<std::string> argument_words(pid_t pid) {
  const int fd = ::open(fmt::format("/proc/{}/cmdline", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  std::string text(8192, '\0');
  std::size_t have = 0;
  for (ssize_t got = 1; got > 0 && have < text.size(); have += static_cast<std::size_t>(got)) {
    got = ::read(fd, text.data() + have, text.size() - have);
    if (got < 0) {
      have = 0;
      break;
    }
  }
  ::close(fd);
  std::vector<std::string> words;
  for (std::size_t at = 0; at < have;) {
    const std::size_t end = std::min(text.find('\0', at), have);
    words.emplace_back(text, at, end - at);
    at = end + 1;
  }
  return words;
}

bool is_shell(std::string_view comm) {
  for (std::string_view shell : {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"}) {
    if (comm == shell) {
      return true;
    }
  }
  return false;
}

// `sh -c 'STEP'`, `bash -ec 'STEP'`: the shell a build tool runs a step with.
bool runs_one_step(const std::vector<std::string>& argv) {
  return argv.size() > 2 && argv[1].size() > 1 && argv[1][0] == '-' && argv[1][1] != '-'
         && argv[1].find('c') != std::string::npos;
}

}  // namespace

void host_init() {
  hold_closed_stdio();
  platform::block_signals();
  // A write to a closed pipe (-v into `| head`, a report on a FIFO whose
  // reader left) is an error to report, not a reason to die and lose
  // COMMAND's status. COMMAND gets what treeguard inherited back
  // (restore_dispositions, in child_exec).
  ::signal(SIGPIPE, SIG_IGN);
}

bool ignored_at_start(Signal signal) {
  return platform::ignored_at_start(signal_number(signal));
}

void default_in_command(Signal signal) {
  if (int number = signal_number(signal); number > 0) {
    platform::default_in_command(number);
  }
}

void end_by_signal(int number) {
  if (::getpid() == 1) {
    return;  // the namespace's init: exit 128+N instead
  }
  // COMMAND's crash is not treeguard's: no core of treeguard for it. Either
  // way suffices (PR_SET_DUMPABLE also stops a core_pattern pipe).
  const bool undumpable = ::prctl(PR_SET_DUMPABLE, 0) == 0;
  const struct rlimit no_core = {0, 0};
  const bool no_core_limit = ::setrlimit(RLIMIT_CORE, &no_core) == 0;
  if (!undumpable && !no_core_limit) {
    return;
  }
  std::fflush(nullptr);
  struct sigaction fatal {};
  fatal.sa_handler = SIG_DFL;
  sigemptyset(&fatal.sa_mask);
  ::sigaction(number, &fatal, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, number);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(number);
}

std::vector<std::string> host_arguments(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  // Re-executed in a scope: called by the name the user called it by.
  platform::restore_scope_argv0(args);
  return args;
}

std::size_t terminal_columns() {
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0
      && size.ws_col > 0) {
    return size.ws_col;
  }
  return 80;
}

std::vector<std::string> build_command() {
  std::vector<std::string> build;
  pid_t pid = ::getppid();
  for (int depth = 0; depth < 32 && pid > 1; ++depth) {
    // An ancestor waits on its children or runs (ninja, make): its
    // arguments are read unless it is in uninterruptible sleep, which may
    // hold its memory-map lock for good (proc.hpp, arguments_readable()).
    const auto stat = platform::read_proc_stat(pid);
    if (!stat || stat->state == 'D') {
      return {};
    }
    std::vector<std::string> argv = argument_words(pid);
    if (argv.empty()) {
      return {};
    }
    if (is_shell(stat->comm) && !runs_one_step(argv)) {
      return build;  // the person's shell, a script's
    }
    if (!is_shell(stat->comm)) {
      build = std::move(argv);
    }
    pid = stat->ppid;
  }
  return {};
}

std::string new_run_id() {
  // UTC from the epoch by arithmetic (Howard Hinnant's civil_from_days):
  // gmtime_r would read /etc/localtime on every launch.
  const long long now = static_cast<long long>(std::time(nullptr));
  const long long days = now / 86400;
  const long long seconds = now % 86400;
  const long long z = days + 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  const long long day = doy - (153 * mp + 2) / 5 + 1;
  const long long month = mp < 10 ? mp + 3 : mp - 9;
  const long long year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  unsigned short random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random) {
    random = static_cast<unsigned short>(::getpid() ^ now);
  }
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}-{}-{:04x}", year, month, day, seconds / 3600,
                     seconds / 60 % 60, seconds % 60, ::getpid(), random);
}

}  // namespace treeguard
