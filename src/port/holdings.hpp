// What a process of the run holds (DESIGN.md [holdings]): read
// before it is signalled, for the members COMMAND left behind, the members
// alive at a deadline and the survivors of a forced kill, so that the
// report and the one stderr line can say why a leftover mattered (a port
// still bound, the run's stdout still open, a GPU still held).
//
// The data and its words are portable (holdings.cpp); read_holdings() is
// defined once per platform: platform/linux/holdings.cpp over /proc,
// platform/windows/holdings.cpp over the TCP/UDP owner tables.
#pragma once

#include "identity.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// The kinds, most telling first: a leftover's line names its first.
enum class HoldingKind {
  listening,    // a TCP socket listening, or a UDP socket bound: "tcp 0.0.0.0:8000"
  accelerator,  // a GPU or accelerator node: /dev/nvidia*, /dev/dri/*, /dev/kfd, /dev/accel/*
  stdio,        // the run's own stdin, stdout or stderr: "stdout", "stdout, stderr"
  unix_socket,  // a unix socket with a name: its path, or "@name" (abstract)
  device,       // any other device node, by path
  lock,         // a lock it holds: "/srv/db.lock (POSIX WRITE)"
  writing,      // a regular file open for writing
  cwd,          // its working directory
};

struct Holding {
  HoldingKind kind = HoldingKind::cwd;
  std::string what;
};

inline bool operator==(const Holding& a, const Holding& b) {
  return a.kind == b.kind && a.what == b.what;
}

// The bounds (DESIGN.md [holdings]): the first
// k_holdings_processes processes asked about are read, each through at
// most k_holdings_descriptors of its descriptors, and at most
// k_holdings_kept holdings are kept per process, the most telling; a text
// is cut to k_holding_text bytes.
inline constexpr std::size_t k_holdings_processes = 128;
inline constexpr std::size_t k_holdings_descriptors = 1024;
inline constexpr std::size_t k_holdings_kept = 16;
inline constexpr std::size_t k_holding_text = 200;

// What one process held when it was read. `note` says what is missing
// when the list is not whole ("not readable: Permission denied", "only
// the first 1024 descriptors read", "3 more not kept").
struct ProcessHoldings {
  ProcessIdentity who;
  std::vector<Holding> holds;
  std::string note;
};

// Defined by the platform: what each of `members` holds now, for the first
// k_holdings_processes of them. Reads only (links read with readlink, no
// path of the process opened, no device node opened); never blocks on a
// file system. A process gone meanwhile is left out.
std::vector<ProcessHoldings> read_holdings(const std::vector<MemberInfo>& members);

// The reader the lifecycle calls (a fake in unit tests; unset: nothing read).
using HoldingsReader = std::function<std::vector<ProcessHoldings>(const std::vector<MemberInfo>&)>;

// The name of a kind, as the report writes it: "listening", "accelerator",
// "stdio", "unix-socket", "device", "lock", "writing", "cwd".
std::string_view holding_kind_name(HoldingKind kind);

// A holding in words, after a process's name: "listening on tcp
// 0.0.0.0:8000", "holding the run's stdout", "holding GPU /dev/nvidia0",
// "in /srv/app" (its working directory).
std::string describe_holding(const Holding& holding);

// Keep what matters: duplicates dropped, the most telling first (the kinds'
// order, then the order found), at most k_holdings_kept; what was dropped
// beyond that is counted into `note`. Every platform reader ends with it.
void keep_most_telling(ProcessHoldings& process);

// `text` as a holding keeps it (name_text(): printable, cut).
std::string holding_text(std::string_view text);

// The holdings read for `who`, or null.
const ProcessHoldings* holdings_of(const std::vector<ProcessHoldings>& all,
                                   const ProcessIdentity& who);

// Add `read` to `all`; a process read again replaces its earlier reading.
void merge_holdings(std::vector<ProcessHoldings>& all, std::vector<ProcessHoldings> read);

}  // namespace treeguard
