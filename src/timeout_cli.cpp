#include "timeout_cli.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace treeguard {

const char* const k_timeout_summary =
    "Run COMMAND as coreutils' timeout does (its options, durations, signals and exit "
    "statuses), inside run's boundary";

namespace {

// Longer than any deadline a run can meet; a DURATION beyond it saturates
// to "no deadline", as timeout's saturates to the largest time it can set.
constexpr long double k_saturated_seconds = 100.0L * 365 * 24 * 3600;

constexpr const char* k_help =
    "Usage: {0} [OPTION]... DURATION COMMAND [ARG]...\n"
    "Run COMMAND; if it is still running after DURATION, send it SIGNAL. Whatever\n"
    "happens, every process COMMAND started is taken down and that is proven, as\n"
    "under `treeguard run` (the same boundary, record and guardian).\n"
    "\n"
    "  -f, --foreground           COMMAND keeps the terminal (it does under run too);\n"
    "                             its tree is still taken down\n"
    "  -k, --kill-after=DURATION  send KILL this long after SIGNAL if COMMAND's tree\n"
    "                             is still there (default: wait for COMMAND, then\n"
    "                             1s for what it leaves behind)\n"
    "  -p, --preserve-status      exit with COMMAND's status even after the deadline\n"
    "  -s, --signal=SIGNAL        the signal for the deadline (default TERM): a name\n"
    "                             (TERM, SIGTERM, term, RTMIN+1), a number, 0 = none\n"
    "  -v, --verbose              say on stderr each signal sent for the deadline\n"
    "      --help                 print this help and exit\n"
    "      --version              print the version and exit\n"
    "\n"
    "DURATION is a number (2, 1.5, 1e3, 0x10, inf) and one optional unit: s (the\n"
    "default), m, h or d. 0 means no deadline.\n"
    "\n"
    "Exit status: 124 the deadline passed; 137 (128+9) COMMAND got the KILL;\n"
    "125 treeguard failed; 126 COMMAND cannot run; 127 COMMAND not found; 121 and\n"
    "122 as under run; else COMMAND's own (128+N: it died of signal N).\n"
    "\n"
    "Environment, as for run: TREEGUARD_BOUNDARY, TREEGUARD_CGROUP_PARENT,\n"
    "TREEGUARD_LEFTOVERS, TREEGUARD_MEMORY_MAX, TREEGUARD_PIDS_MAX, TREEGUARD_STATE_DIR.\n";

struct LongOption {
  std::string_view name;
  char letter;
  bool takes_value;
};

// In timeout's order: an ambiguous prefix lists its candidates so.
constexpr LongOption k_long_options[] = {
    {"foreground", 'f', false}, {"kill-after", 'k', true}, {"preserve-status", 'p', false},
    {"signal", 's', true},      {"verbose", 'v', false},   {"help", 'h', false},
    {"version", 'V', false},
};

bool short_takes_value(char letter) {
  return letter == 'k' || letter == 's';
}

bool short_is_flag(char letter) {
  return letter == 'f' || letter == 'p' || letter == 'v';
}

// The options before DURATION, as getopt reads them for timeout: clusters
// ("-pv", "-k5"), long names and their unique prefixes ("--kill=5",
// "--kill 5"), "--" ends them, the first other argument is DURATION.
struct OptionsRead {
  std::vector<std::pair<char, std::string>> options;
  std::optional<std::string> error;  // the first one; options before it still apply
  std::size_t operands_at = 0;
};

std::optional<std::string> read_long_option(const std::vector<std::string>& args, std::size_t& i,
                                            OptionsRead& out) {
  const std::string& arg = args[i];
  const std::string_view body = std::string_view(arg).substr(2);
  const std::size_t equals = body.find('=');
  const std::string_view name = body.substr(0, equals);
  const LongOption* found = nullptr;
  std::vector<const LongOption*> candidates;
  for (const auto& option : k_long_options) {
    if (option.name == name) {
      found = &option;
      break;
    }
    if (option.name.rfind(name, 0) == 0) {
      candidates.push_back(&option);
    }
  }
  if (found == nullptr && candidates.size() == 1) {
    found = candidates.front();
  }
  if (found == nullptr && candidates.empty()) {
    return fmt::format("unrecognized option '{}'", arg);
  }
  if (found == nullptr) {
    std::string list;
    for (const auto* option : candidates) {
      list += fmt::format(" '--{}'", option->name);
    }
    return fmt::format("option '{}' is ambiguous; possibilities:{}", arg, list);
  }
  std::string value;
  if (equals != std::string_view::npos) {
    if (!found->takes_value) {
      return fmt::format("option '--{}' doesn't allow an argument", found->name);
    }
    value = std::string(body.substr(equals + 1));
  } else if (found->takes_value) {
    if (i + 1 >= args.size()) {
      return fmt::format("option '--{}' requires an argument", found->name);
    }
    value = args[++i];
  }
  out.options.emplace_back(found->letter, std::move(value));
  return std::nullopt;
}

std::optional<std::string> read_short_options(const std::vector<std::string>& args, std::size_t& i,
                                              OptionsRead& out) {
  const std::string& arg = args[i];
  for (std::size_t at = 1; at < arg.size(); ++at) {
    const char letter = arg[at];
    if (short_is_flag(letter)) {
      out.options.emplace_back(letter, std::string());
      continue;
    }
    if (!short_takes_value(letter)) {
      return fmt::format("invalid option -- '{}'", letter);
    }
    if (at + 1 < arg.size()) {
      out.options.emplace_back(letter, arg.substr(at + 1));
    } else if (i + 1 < args.size()) {
      out.options.emplace_back(letter, args[++i]);
    } else {
      return fmt::format("option requires an argument -- '{}'", letter);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

OptionsRead read_options(const std::vector<std::string>& args, std::size_t first) {
  OptionsRead out;
  std::size_t i = first;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg.front() != '-') {
      break;
    }
    out.error = arg[1] == '-' ? read_long_option(args, i, out) : read_short_options(args, i, out);
    if (out.error) {
      break;
    }
  }
  out.operands_at = i;
  return out;
}

// One option applied to the run; false with `out.error` or `out.exit_now`
// set when the command line ends here.
bool apply_option(char letter, const std::string& value, const std::string& program,
                  Invocation& out) {
  RunOptions& run = out.run;
  switch (letter) {
  case 'f':
    return true;  // COMMAND keeps the terminal: it does under run, always
  case 'p':
    run.policy.preserve_status = true;
    return true;
  case 'v':
    run.timeout_verbose = true;
    return true;
  case 'k': {
    auto kill_after = parse_timeout_duration(value);
    if (!kill_after) {
      out.error = kill_after.error().message();
      return false;
    }
    // No limit (0, inf): no KILL while COMMAND runs, as timeout (its
    // leftovers get k_leftover_grace).
    run.policy.kill_after = kill_after->value_or(Duration(0));
    return true;
  }
  case 's': {
    auto signal = parse_timeout_signal(value);
    if (!signal) {
      out.error = signal.error().message();
      return false;
    }
    if (*signal == signals::stop) {
      // As run: STOP would leave the tree stopped and the run waiting on it
      // (coreutils' timeout stops itself with its group).
      out.error = fmt::format("{}: STOP cannot be the deadline's signal", value);
      return false;
    }
    run.policy.stop_signal = *signal;
    return true;
  }
  case 'h':
    out.exit_now = true;
    out.output = fmt::format(k_help, program);
    return false;
  default:  // 'V'
    out.exit_now = true;
    out.output = fmt::format("timeout (treeguard) {}\n", TREEGUARD_VERSION);
    return false;
  }
}

}  // namespace

std::optional<std::string> timeout_program(const std::vector<std::string>& args) {
  if (args.empty()) {
    return std::nullopt;
  }
  const std::string& zero = args.front();
  const std::size_t slash = zero.find_last_of("/\\");
  std::string base = slash == std::string::npos ? zero : zero.substr(slash + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".exe") == 0) {
    base.erase(base.size() - 4);
  }
  if (base == "timeout") {
    return zero;
  }
  if (args.size() > 1 && args[1] == "timeout") {
    return zero + " timeout";
  }
  return std::nullopt;
}

Invocation parse_timeout_command_line(const std::vector<std::string>& args,
                                      const std::string& program,
                                      const EnvironmentLookup& environment) {
  Invocation out;
  out.command = Invocation::Command::run;
  RunOptions& run = out.run;
  run.timeout_program = program;
  // timeout's defaults: TERM, no KILL, silence but for errors.
  run.policy.kill_after = Duration(0);
  run.policy.kill_exits_137 = true;
  run.quiet = true;

  const std::size_t first = program == args.front() ? 1 : 2;
  OptionsRead read = read_options(args, first);
  for (const auto& [letter, value] : read.options) {
    if (!apply_option(letter, value, program, out)) {
      return out;
    }
  }
  if (read.error) {
    out.error = read.error;
    return out;
  }
  if (args.size() < read.operands_at + 2) {
    out.error = "";  // timeout says only "Try ... --help"
    return out;
  }
  auto timeout = parse_timeout_duration(args[read.operands_at]);
  if (!timeout) {
    out.error = timeout.error().message();
    return out;
  }
  run.policy.timeout = *timeout;
  run.command.assign(args.begin() + static_cast<std::ptrdiff_t>(read.operands_at) + 1, args.end());
  // timeout handles its signal and ALRM itself, ignored or not, so its
  // COMMAND starts with them at their default whatever the caller ignored.
  run.command_defaults = {signals::alrm};
  if (signal_number(run.policy.stop_signal) > 0) {
    run.command_defaults.push_back(run.policy.stop_signal);
  }
  // What timeout has no option for: from the environment, as for run.
  RawRun raw;
  out.error = resolve_run_environment([](const char*) { return false; }, environment, raw, run);
  if (out.error) {
    // Not timeout's words: it has no such variables.
    run.timeout_program.reset();
  }
  return out;
}

Result<std::optional<Duration>> parse_timeout_duration(std::string_view text) {
  auto invalid = [&]() {
    return fail(plain_error(fmt::format("invalid time interval '{}'", text)));
  };
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  // The C locale's strtod: treeguard never sets a locale, so '.' is the
  // decimal point whatever LANG says.
  const double value = std::strtod(copy.c_str(), &end);
  const bool out_of_range = errno == ERANGE;
  if (end == copy.c_str() || std::isnan(value)) {
    return invalid();
  }
  const bool underflow = out_of_range && std::fabs(value) < 1;
  if (std::signbit(value) && (value != 0 || underflow)) {
    return invalid();  // "-1", " -0.1", " -1e-10000"; "-0" is 0
  }
  const std::string_view unit(end);
  if (unit.size() > 1) {
    return invalid();
  }
  long double multiplier = 1;
  switch (unit.empty() ? 's' : unit.front()) {
  case 's':
    break;
  case 'm':
    multiplier = 60;
    break;
  case 'h':
    multiplier = 3600;
    break;
  case 'd':
    multiplier = 86400;
    break;
  default:
    return invalid();
  }
  if (underflow) {
    return std::optional<Duration>(Duration(1));  // rounded up to 1 ns, not 0
  }
  const long double seconds = static_cast<long double>(value) * multiplier;
  if (seconds == 0 || seconds >= k_saturated_seconds) {
    return std::optional<Duration>();
  }
  const auto nanoseconds = static_cast<Duration::rep>(std::ceil(seconds * 1e9L));
  return std::optional<Duration>(Duration(std::max<Duration::rep>(nanoseconds, 1)));
}

namespace {

// A name without SIG, upper case: EXIT (0), a real-time name, or one the
// core knows.
std::optional<Signal> signal_by_name(const std::string& name) {
  if (name.empty()) {
    return std::nullopt;
  }
  if (name == "EXIT") {
    return Signal{SignalId::numbered, 0};
  }
  if (auto realtime = realtime_signal(name)) {
    return realtime;
  }
  if (name.rfind("SIG", 0) == 0 || (name.front() >= '0' && name.front() <= '9')) {
    return std::nullopt;  // parse_signal would take a second SIG or a number
  }
  auto known = parse_signal(name);
  return known ? std::optional<Signal>(*known) : std::nullopt;
}

}  // namespace

Result<Signal> parse_timeout_signal(std::string_view text) {
  auto invalid = [&]() {
    return fail(plain_error(fmt::format("'{}': invalid signal", text)));
  };
  if (!text.empty() && text.front() >= '0' && text.front() <= '9') {
    const std::string copy(text);
    char* end = nullptr;
    errno = 0;
    long number = std::strtol(copy.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || number > 0x7fffffffL) {
      return invalid();
    }
    // A shell's $? for a signal (128+N), or ksh's (256+N), names N.
    number &= number >= 0xFF ? 0xFF : 0x7F;
    if (number > highest_signal_number()) {
      return invalid();
    }
    if (auto named = signal_from_number(static_cast<int>(number))) {
      return *named;
    }
    return Signal{SignalId::numbered, static_cast<int>(number)};
  }
  std::string upper(text);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  if (auto signal = signal_by_name(upper)) {
    return *signal;
  }
  if (upper.rfind("SIG", 0) == 0) {
    if (auto signal = signal_by_name(upper.substr(3))) {
      return *signal;
    }
  }
  return invalid();
}

}  // namespace treeguard
