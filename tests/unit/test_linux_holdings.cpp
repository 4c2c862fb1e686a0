// What a process holds, read from /proc (DESIGN.md [holdings]):
// the table and fdinfo parsers on the kernel's own lines, then the reader on
// a real process of the test's making.
#include "in_child.hpp"
#include "linux/holdings_proc.hpp"
#include "linux/proc.hpp"
#include "port/holdings.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

using namespace treeguard;
using namespace treeguard::platform;

namespace {

bool holds(const ProcessHoldings& process, HoldingKind kind, const std::string& what) {
  return std::find(process.holds.begin(), process.holds.end(), Holding{kind, what})
         != process.holds.end();
}

// A directory of the test's own, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/tg-holdings.XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// A child that holds what `hold` sets up, then says so on a pipe and
// sleeps; killed and reaped at the end (it is the test's own child).
struct Holder {
  pid_t pid = -1;
  unsigned long long start_time = 0;
  std::string said;  // what the child wrote before its ready byte

  template <typename Setup>
  explicit Holder(Setup hold) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(ready[0]);
      const std::string text = hold();
      (void)!::write(ready[1], text.data(), text.size());
      (void)!::write(ready[1], "\n", 1);
      for (;;) {
        ::pause();
      }
    }
    ::close(ready[1]);
    char c;
    while (::read(ready[0], &c, 1) == 1 && c != '\n') {
      said.push_back(c);
    }
    ::close(ready[0]);
    auto stat = read_proc_stat(pid);
    REQUIRE(stat);
    start_time = stat->start_time;
  }
  ~Holder() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  MemberInfo member() const {
    MemberInfo out;
    out.pid = pid;
    out.start_time = start_time;
    return out;
  }
};

}  // namespace

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("holdings: TCP and UDP tables, listening and bound only, IPv4 and IPv6") {
  NamedSockets sockets;
  const char* heading = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                        "retrnsmt   uid  timeout inode";
  CHECK(parse_inet_socket_line(heading, "tcp", sockets));
  CHECK(parse_inet_socket_line("   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 "
                               "00000000     0        0 4242 1 0000000000000000 100 0 0 10 0",
                               "tcp", sockets));
  CHECK(parse_inet_socket_line("   1: 0100007F:0277 00000000:0000 0A 00000000:00000000 00:00000000 "
                               "00000000     0        0 4243 1 0000000000000000 100 0 0 10 0",
                               "tcp", sockets));
  // An established connection: the listening ones are over, read no further.
  CHECK_FALSE(parse_inet_socket_line("   2: 0100007F:1F40 0100007F:C350 01 00000000:00000000 "
                                     "00:00000000 00000000     0        0 4244 1",
                                     "tcp", sockets));
  CHECK(sockets.at(4242) == Holding{HoldingKind::listening, "tcp 0.0.0.0:8000"});
  CHECK(sockets.at(4243) == Holding{HoldingKind::listening, "tcp 127.0.0.1:631"});
  CHECK(sockets.count(4244) == 0);

  CHECK(parse_inet_socket_line("   0: 00000000000000000000000000000000:1F90 "
                               "00000000000000000000000000000000:0000 0A 00000000:00000000 "
                               "00:00000000 00000000  1000        0 5151 1",
                               "tcp", sockets));
  CHECK(sockets.at(5151) == Holding{HoldingKind::listening, "tcp [::]:8080"});
  CHECK(parse_inet_socket_line("   0: 00000000000000000000000001000000:14E9 "
                               "00000000000000000000000000000000:0000 07 00000000:00000000 "
                               "00:00000000 00000000   0        0 6161 2",
                               "udp", sockets));
  CHECK(sockets.at(6161) == Holding{HoldingKind::listening, "udp [::1]:5353"});
  // A connected UDP socket (01) and a table line that is not one are passed over.
  CHECK(parse_inet_socket_line("  9: 0100007F:A000 0100007F:0035 01 00000000:00000000 00:00000000 "
                               "00000000     0        0 7171 2",
                               "udp", sockets));
  CHECK(sockets.count(7171) == 0);
  CHECK(parse_inet_socket_line("garbage", "udp", sockets));
  CHECK(inet_address("0100007F:1F90") == std::optional<std::string>("127.0.0.1:8080"));
  CHECK_FALSE(inet_address("0100007F"));
  CHECK_FALSE(inet_address("01007F:1F90"));
}

TEST_CASE("holdings: unix sockets by name, listening said, unnamed left out") {
  NamedSockets sockets;
  parse_unix_socket_line("Num       RefCount Protocol Flags    Type St Inode Path", sockets);
  parse_unix_socket_line("0000000000000000: 00000002 00000000 00010000 0001 01 811 /run/app "
                         "dir/app.sock",
                         sockets);
  parse_unix_socket_line("0000000000000000: 00000002 00000000 00000000 0002 01 812 @abstract",
                         sockets);
  parse_unix_socket_line("0000000000000000: 00000003 00000000 00000000 0001 03 813", sockets);
  CHECK(sockets.at(811) == Holding{HoldingKind::unix_socket, "/run/app dir/app.sock (listening)"});
  CHECK(sockets.at(812) == Holding{HoldingKind::unix_socket, "@abstract"});
  CHECK(sockets.count(813) == 0);
  CHECK(describe_holding(sockets.at(811)) == "listening on unix socket /run/app dir/app.sock");
  CHECK(describe_holding(sockets.at(812)) == "on unix socket @abstract");
}

TEST_CASE("holdings: fdinfo gives the open flags and the locks held through the descriptor") {
  const auto info = parse_fdinfo("pos:\t0\nflags:\t0100002\nmnt_id:\t29\nino:\t131\n"
                                 "lock:\t1: POSIX  ADVISORY  WRITE 1234 08:02:131 0 EOF\n"
                                 "lock:\t2: FLOCK  ADVISORY  READ  1234 08:02:131 0 EOF\n");
  CHECK((info.flags & O_ACCMODE) == O_RDWR);
  CHECK(info.locks == std::vector<std::string>{"POSIX WRITE", "FLOCK READ"});
  CHECK((parse_fdinfo("pos:\t0\nflags:\t02100000\n").flags & O_ACCMODE) == O_RDONLY);
}

TEST_CASE("holdings: GPUs and accelerators by path") {
  CHECK(is_accelerator_path("/dev/nvidia0"));
  CHECK(is_accelerator_path("/dev/nvidiactl"));
  CHECK(is_accelerator_path("/dev/dri/renderD128"));
  CHECK(is_accelerator_path("/dev/kfd"));
  CHECK(is_accelerator_path("/dev/accel/accel0"));
  CHECK_FALSE(is_accelerator_path("/dev/kfd2"));
  CHECK_FALSE(is_accelerator_path("/tmp/dev/nvidia0"));
}

TEST_CASE("holdings: the most telling first, duplicates once, at most the bound kept") {
  ProcessHoldings process;
  process.holds = {{HoldingKind::cwd, "/srv"},
                   {HoldingKind::writing, "/srv/log"},
                   {HoldingKind::listening, "tcp 0.0.0.0:8000"},
                   {HoldingKind::writing, "/srv/log"}};
  keep_most_telling(process);
  REQUIRE(process.holds.size() == 3);
  CHECK(process.holds.front() == Holding{HoldingKind::listening, "tcp 0.0.0.0:8000"});
  CHECK(process.holds.back() == Holding{HoldingKind::cwd, "/srv"});
  CHECK(process.note.empty());
  CHECK(describe_holding(process.holds.front()) == "listening on 0.0.0.0:8000");

  for (std::size_t i = 0; i < k_holdings_kept + 5; ++i) {
    process.holds.push_back({HoldingKind::writing, "/f" + std::to_string(i)});
  }
  keep_most_telling(process);
  CHECK(process.holds.size() == k_holdings_kept);
  CHECK(process.holds.front().kind == HoldingKind::listening);
  CHECK(process.note == "8 more not kept");
}

TEST_CASE("holdings: a real process's port, unix socket, written file, lock, device and cwd") {
  TempDir dir;
  const std::string base = dir.path.string();
  const bool can_mknod = ::mknod((base + "/zero0").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0;
  Holder holder([&]() -> std::string {
    const int tcp = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(tcp, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0
        || ::listen(tcp, 1) != 0
        || ::getsockname(tcp, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ::_exit(90);
    }
    const int unix_socket = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un named{};
    named.sun_family = AF_UNIX;
    std::snprintf(named.sun_path, sizeof named.sun_path, "%s/app.sock", base.c_str());
    if (::bind(unix_socket, reinterpret_cast<sockaddr*>(&named), sizeof named) != 0
        || ::listen(unix_socket, 1) != 0) {
      ::_exit(91);
    }
    if (::open((base + "/out.log").c_str(), O_WRONLY | O_CREAT, 0600) < 0) {
      ::_exit(92);
    }
    const int locked = ::open((base + "/db.lock").c_str(), O_RDONLY | O_CREAT, 0600);
    if (locked < 0 || ::flock(locked, LOCK_EX) != 0) {
      ::_exit(93);
    }
    if (::open((base + "/read-only").c_str(), O_RDONLY | O_CREAT, 0600) < 0
        || ::open("/dev/null", O_RDONLY) < 0 || ::chdir(base.c_str()) != 0) {
      ::_exit(94);
    }
    if (can_mknod && ::open((base + "/zero0").c_str(), O_RDONLY) < 0) {
      ::_exit(95);
    }
    return std::to_string(ntohs(address.sin_port));
  });
  REQUIRE_FALSE(holder.said.empty());
  const auto read = read_holdings({holder.member()});
  REQUIRE(read.size() == 1);
  const ProcessHoldings& held = read.front();
  CHECK(held.who.pid == holder.pid);
  CHECK(holds(held, HoldingKind::listening, "tcp 127.0.0.1:" + holder.said));
  CHECK(holds(held, HoldingKind::unix_socket, base + "/app.sock (listening)"));
  CHECK(holds(held, HoldingKind::writing, base + "/out.log"));
  CHECK(holds(held, HoldingKind::lock, base + "/db.lock (FLOCK WRITE)"));
  CHECK(holds(held, HoldingKind::cwd, base));
  if (can_mknod) {
    CHECK(holds(held, HoldingKind::device, base + "/zero0"));
  } else {
    MESSAGE("mknod not permitted here: the device case is not checked");
  }
  // Read-only files, /dev/null: nothing to tell.
  for (const auto& holding : held.holds) {
    CHECK(holding.what.find("read-only") == std::string::npos);
    CHECK(holding.what != "/dev/null");
  }
  CHECK(held.holds.front().kind == HoldingKind::listening);
}

TEST_CASE("holdings: the run's own stdout, however the holder numbers it") {
  const int status = test::exit_status_in_child([] {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0 || ::dup2(pipe_fds[1], 1) != 1) {
      return 10;
    }
    Holder holder([] {
      // The holder keeps it as another descriptor, closes its own 1, and
      // has its stdin and stderr on /dev/null.
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (::dup2(1, 7) != 7 || ::close(1) != 0 || null_fd < 0 || ::dup2(null_fd, 0) != 0
          || ::dup2(null_fd, 2) != 2) {
        ::_exit(96);
      }
      return std::string("ok");
    });
    const auto read = read_holdings({holder.member()});
    if (read.size() != 1) {
      return 11;
    }
    // (whatever else of the run's stdio it inherited from this test's runner: "stdout and
    // stderr" when the runner's stderr is open in it under another number)
    for (const auto& holding : read.front().holds) {
      if (holding.kind == HoldingKind::stdio && holding.what.find("stdout") != std::string::npos) {
        return 0;
      }
    }
    return 12;
  });
  CHECK(status == 0);
}

TEST_CASE("holdings: a process gone, or a pid that is another process now, is left out") {
  MemberInfo gone;
  {
    Holder holder([] { return std::string("ok"); });
    gone = holder.member();
  }
  CHECK(read_holdings({gone}).empty());
  Holder holder([] { return std::string("ok"); });
  MemberInfo recycled = holder.member();
  recycled.start_time += 1;
  CHECK(read_holdings({recycled}).empty());
  CHECK(read_holdings({holder.member()}).size() == 1);
}

TEST_CASE("holdings: at most the bound of processes is read") {
  Holder holder([] { return std::string("ok"); });
  std::vector<MemberInfo> many(k_holdings_processes + 10, holder.member());
  CHECK(read_holdings(many).size() == k_holdings_processes);
}
