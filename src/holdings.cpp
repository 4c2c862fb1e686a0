#include "port/holdings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace treeguard {

std::string_view holding_kind_name(HoldingKind kind) {
  switch (kind) {
  case HoldingKind::listening:
    return "listening";
  case HoldingKind::accelerator:
    return "accelerator";
  case HoldingKind::stdio:
    return "stdio";
  case HoldingKind::unix_socket:
    return "unix-socket";
  case HoldingKind::device:
    return "device";
  case HoldingKind::lock:
    return "lock";
  case HoldingKind::writing:
    return "writing";
  case HoldingKind::cwd:
    return "cwd";
  }
  return "unknown";
}

std::string describe_holding(const Holding& holding) {
  switch (holding.kind) {
  case HoldingKind::listening:
    // TCP is what a port means unless said otherwise: "listening on
    // 0.0.0.0:8000", "listening on udp 0.0.0.0:5353".
    return "listening on "
           + (holding.what.rfind("tcp ", 0) == 0 ? holding.what.substr(4) : holding.what);
  case HoldingKind::accelerator:
    return "holding GPU/accelerator " + holding.what;
  case HoldingKind::stdio:
    return "holding the run's " + holding.what;
  case HoldingKind::unix_socket: {
    const std::string_view listening = " (listening)";
    const std::string& what = holding.what;
    if (what.size() > listening.size()
        && what.compare(what.size() - listening.size(), listening.size(), listening) == 0) {
      return "listening on unix socket " + what.substr(0, what.size() - listening.size());
    }
    return "on unix socket " + what;
  }
  case HoldingKind::device:
    return "holding device " + holding.what;
  case HoldingKind::lock:
    return "locking " + holding.what;
  case HoldingKind::writing:
    return "writing " + holding.what;
  case HoldingKind::cwd:
    return "in " + holding.what;
  }
  return holding.what;
}

std::string holding_text(std::string_view text) {
  return name_text(text, k_holding_text);
}

void keep_most_telling(ProcessHoldings& process) {
  auto& holds = process.holds;
  std::vector<Holding> unique;
  unique.reserve(holds.size());
  for (auto& holding : holds) {
    if (std::find(unique.begin(), unique.end(), holding) == unique.end()) {
      unique.push_back(std::move(holding));
    }
  }
  std::stable_sort(unique.begin(), unique.end(), [](const Holding& a, const Holding& b) {
    return static_cast<int>(a.kind) < static_cast<int>(b.kind);
  });
  if (unique.size() > k_holdings_kept) {
    const std::string dropped = fmt::format("{} more not kept", unique.size() - k_holdings_kept);
    process.note = process.note.empty() ? dropped : process.note + "; " + dropped;
    unique.resize(k_holdings_kept);
  }
  holds = std::move(unique);
}

const ProcessHoldings* holdings_of(const std::vector<ProcessHoldings>& all,
                                   const ProcessIdentity& who) {
  for (const auto& process : all) {
    if (process.who == who) {
      return &process;
    }
  }
  return nullptr;
}

void merge_holdings(std::vector<ProcessHoldings>& all, std::vector<ProcessHoldings> read) {
  for (auto& process : read) {
    auto known = std::find_if(all.begin(), all.end(), [&](const ProcessHoldings& earlier) {
      return earlier.who == process.who;
    });
    if (known != all.end()) {
      *known = std::move(process);
    } else {
      all.push_back(std::move(process));
    }
  }
}

}  // namespace treeguard
