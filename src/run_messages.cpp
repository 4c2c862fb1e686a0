#include "run_messages.hpp"

#include "port/holdings.hpp"
#include "printable.hpp"
#include "report.hpp"
#include "timeout_cli.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <tuple>

namespace treeguard {

void print_line(const std::string& line) noexcept {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void print_error(const std::string& message) {
  // One line, even for a path or a value holding a newline.
  print_line(fmt::format("treeguard: error: {}\n", escaped(message)));
}

std::function<void(Signal)> timeout_announcer(const RunOptions& options) {
  if (!options.timeout_program || !options.timeout_verbose) {
    return {};
  }
  return [program = *options.timeout_program,
          command = escaped(options.command.front())](Signal signal) {
    print_line(fmt::format("{}: sending signal {} to command '{}'\n", program, signal_name(signal),
                           command));
  };
}

namespace {

// The tree's OOM kills (a line unless -q: a COMMAND that died of SIGKILL
// says why) and, with -v, what it used, as the run's last verbose line (the
// one line saying treeguard ended the work, when it did, follows it).
void report_usage(const RunOutcome& outcome, const RunOptions& options, const Logger& log) {
  if (!outcome.usage) {
    return;
  }
  const TreeUsage& usage = *outcome.usage;
  if (!options.quiet && usage.oom_kills && *usage.oom_kills > 0) {
    print_line(fmt::format(
        "treeguard: the kernel's OOM killer killed {} process(es) in the boundary{}\n",
        *usage.oom_kills,
        options.limits.memory_max
            ? fmt::format(" (--memory-max {})", format_bytes(*options.limits.memory_max))
            : std::string()));
  }
  log(fmt::format("consumed {}", describe_usage(usage)));
}

// The error line when COMMAND could not be started. In timeout's words
// under its grammar; under run, a first word that is not found but reads as
// a duration (`treeguard run 10 make`) gets the two command lines meant.
std::string spawn_failure_line(const RunOptions& options, const RunOutcome& outcome) {
  const Error& error = *outcome.spawn_error;
  const std::string& first = options.command.front();
  if (options.timeout_program && outcome.exit_code >= 126) {
    return fmt::format("{}: failed to run command '{}': {}\n", *options.timeout_program,
                       escaped(first), error.code.message());
  }
  std::string line = fmt::format("treeguard: error: {}", escaped(outcome.message));
  if (outcome.exit_code == 127 && options.command.size() > 1 && parse_timeout_duration(first)) {
    std::string rest;
    for (std::size_t i = 1; i < options.command.size(); ++i) {
      rest += " " + shell_quoted(options.command[i]);
    }
    line += fmt::format("; for a deadline of {0}: treeguard run -t {0}{1}, or treeguard "
                        "timeout {0}{1}",
                        escaped(first), rest);
  }
  return line + "\n";
}

}  // namespace

namespace {

// Who was killed by force, and what ended their grace: its length, or a
// second interrupt that cut it short ("killed 2 that resisted TERM for
// 10s: sleep (pid 12), sh (pid 13)").
std::string killed_phrase(const RunOptions& options, const RunOutcome& outcome) {
  const std::string signal = signal_name(options.policy.stop_signal);
  const std::size_t count = outcome.forced_members.size();
  const std::string cut_short =
      outcome.grace_cut_by
          ? fmt::format(" when {} cut the grace period short", signal_name(*outcome.grace_cut_by))
          : std::string();
  return count == 0                                    ? "killed what was left" + cut_short
         : options.policy.stop_signal == signals::kill ? fmt::format(
               "killed {} by SIGKILL: {}", count, describe_members(outcome.forced_members))
         : outcome.grace_cut_by ? fmt::format("killed {} that resisted {}{}: {}", count, signal,
                                              cut_short, describe_members(outcome.forced_members))
                                : fmt::format("killed {} that resisted {} for {}: {}", count,
                                              signal, format_duration(outcome.grace),
                                              describe_members(outcome.forced_members));
}

// " (COMMAND: make check)": many runs share one log under make -j.
std::string whose_tree(const RunOptions& options) {
  return fmt::format(" (COMMAND: {})",
                     printable(fmt::format("{}", fmt::join(options.command, " ")), 60));
}

// A leftover and what it held: its most telling holding, or (`all`) every
// one: "python3 (pid 812) listening on 0.0.0.0:8000".
std::string leftover_said(const MemberInfo& member, const RunOutcome& outcome, bool all) {
  std::string out = describe_member(member);
  const ProcessHoldings* held = holdings_of(outcome.holdings, member);
  if (held == nullptr || held->holds.empty()) {
    return out;
  }
  if (!all) {
    return out + " " + describe_holding(held->holds.front());
  }
  std::vector<std::string> said;
  for (const auto& holding : held->holds) {
    said.push_back(describe_holding(holding));
  }
  out += ": " + fmt::format("{}", fmt::join(said, ", "));
  if (!held->note.empty()) {
    out += fmt::format(" ({})", held->note);
  }
  return out;
}

// What was done with the leftovers.
std::string leftovers_done(const RunOptions& options, const RunOutcome& outcome) {
  if (!outcome.handed_over.empty()) {
    return outcome.leaked ? fmt::format("{} handed to run {}, the rest taken down",
                                        outcome.handed_over.size(), outcome.handed_to)
                          : fmt::format("handed to run {}, which takes them down: not a leak",
                                        outcome.handed_to);
  }
  if (options.policy.leftovers == Leftovers::wait) {
    switch (outcome.cause) {
    case StopCause::deadline:
      return "waited for until the deadline, then taken down";
    case StopCause::signal:
      return "waited for until treeguard was stopped, then taken down";
    default:
      return "waited for";
    }
  }
  std::string done =
      outcome.forced ? "taken down: " + killed_phrase(options, outcome) : std::string("taken down");
  if (options.policy.leftovers == Leftovers::fail) {
    done += outcome.exit_code == k_exit_leaked
                ? "; a leak (--leftovers fail): exit 120"
                : "; a leak (--leftovers fail), and COMMAND's own exit status stands";
  }
  return done;
}

}  // namespace

std::optional<std::string> leftovers_line(const RunOptions& options, const RunOutcome& outcome) {
  const std::vector<MemberInfo>& left = outcome.leftovers;
  const bool said = options.timeout_program ? options.timeout_verbose : !options.quiet;
  if (left.empty() || !said) {
    return std::nullopt;
  }
  const bool all = options.verbose > 0;
  const std::size_t shown = std::min<std::size_t>(left.size(), 3);
  std::vector<std::string> named;
  for (std::size_t i = 0; i < shown; ++i) {
    named.push_back(leftover_said(left[i], outcome, false));
  }
  std::string line = fmt::format("treeguard: COMMAND left {} process{} behind", left.size(),
                                 left.size() == 1 ? "" : "es");
  if (!named.empty()) {
    line += fmt::format(": {}", fmt::join(named, ", "));
    if (left.size() > shown) {
      line += fmt::format(" and {} more", left.size() - shown);
    }
  }
  line += fmt::format("; {}{}", leftovers_done(options, outcome), whose_tree(options));
  // Not handed over for want of an enclosing run: why, and the command that
  // gives one, last on the line so that it can be pasted as it stands.
  if (outcome.handed_over.empty() && !outcome.no_enclosing_run.empty()) {
    line += "; " + outcome.no_enclosing_run;
  }
  line += "\n";
  for (std::size_t i = 0; all && i < left.size(); ++i) {
    line += fmt::format("treeguard: left behind: {}\n", leftover_said(left[i], outcome, true));
  }
  return line;
}

std::optional<std::string> stop_line(const RunOptions& options, const RunOutcome& outcome) {
  const std::string signal = signal_name(options.policy.stop_signal);
  const std::string killed = killed_phrase(options, outcome);
  const std::string whose = whose_tree(options);
  if (outcome.cause == StopCause::deadline) {
    const std::string deadline = deadline_name(outcome, options.policy);
    if (!outcome.forced) {
      return fmt::format("treeguard: {} passed: COMMAND's tree was sent {}{}\n", deadline, signal,
                         whose);
    }
    return fmt::format("treeguard: {} passed: {}{}\n", deadline, killed, whose);
  }
  if (outcome.cause == StopCause::signal) {
    // A stop request (a CI runner's cancel: INT, then TERM) ends the work
    // whether or not anything had to be forced: say so.
    const std::string stopped = signal_name(outcome.stop_signal.value_or(signals::term));
    if (!outcome.forced) {
      return fmt::format("treeguard: stopped on {}: COMMAND's tree was sent {} and ended{}\n",
                         stopped, signal, whose);
    }
    return fmt::format("treeguard: stopped on {}: {}{}\n", stopped, killed, whose);
  }
  // Leftovers forced after COMMAND exited: leftovers_line() says it, with
  // what they held.
  if (outcome.forced && outcome.leftovers.empty()) {
    return fmt::format("treeguard: {}{}{}\n",
                       outcome.cause == StopCause::child_exited ? "COMMAND exited; left over, "
                                                                : "",
                       killed, whose);
  }
  return std::nullopt;
}

void tell_the_end(const RunOptions& options, const RecordStore& store, const RecordJournal& journal,
                  const RunOutcome& outcome, std::int64_t started_at, const Logger& log) {
  if (options.keep_records && outcome.disposition == Disposition::pass) {
    // Retention: finished records do not pile up without bound.
    std::ignore = store.prune_finished(options.keep_limit);
  }

  if (!outcome.close_error.empty()) {
    print_line(fmt::format("treeguard: warning: {}\n", outcome.close_error));
  }
  if (journal.write_error() && outcome.disposition != Disposition::pass) {
    print_line(fmt::format("treeguard: warning: record {}: {}\n", journal.record().run_id,
                           journal.write_error()->message()));
  }
  if (options.report) {
    // The report never fails the run: whatever goes wrong is one warning.
    std::string why;
    try {
      const ReportInput run{journal.record(), journal.timeline(), outcome,
                            options.policy,   started_at,         unix_time_ns()};
      auto written = write_report(*options.report, make_report(run));
      if (!written) {
        why = written.error().message();
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      print_line(fmt::format("treeguard: warning: report {}: {}\n", *options.report, why));
    }
  }
  report_usage(outcome, options, log);
  // A launcher's failure must not go unexplained (ninja shows stderr): one
  // line when treeguard, not COMMAND, ended the work. -q silences it; 122
  // has its own error line.
  if (auto line = leftovers_line(options, outcome)) {
    print_line(*line);
  }
  if (!options.quiet && outcome.exit_code != 122) {
    if (auto line = stop_line(options, outcome)) {
      print_line(*line);
    }
  }
  if (options.timeout_program && outcome.child_status && outcome.child_status->core_dumped) {
    print_line(fmt::format("{}: the monitored command dumped core\n", *options.timeout_program));
  }
  if (outcome.spawn_error) {
    print_line(spawn_failure_line(options, outcome));
  } else if (!outcome.message.empty() && outcome.exit_code >= 121 && outcome.exit_code <= 127) {
    print_error(outcome.exit_code == 122
                    ? fmt::format("run {}: {}", journal.record().run_id, outcome.message)
                    : outcome.message);
  }
}

}  // namespace treeguard
