#include "cli.hpp"

#include "duration.hpp"
#include "signal_name.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace treeguard {

namespace {

constexpr const char* k_description =
  "treeguard runs a command inside a containment boundary (a cgroup v2 leaf, a\n"
  "Windows job object, or a process group with a subreaper) and, when the\n"
  "command is over, takes down every process it started and proves it.";

constexpr const char* k_run_footer =
  "Exit status: COMMAND's own; 128+N if it died of signal N or treeguard was\n"
  "stopped by signal N; 124 deadline passed; 125 treeguard could not start\n"
  "COMMAND; 126 not executable; 127 not found; 121 dispatch refused (an\n"
  "unresolved run blocks the state directory); 122 fail-closed ambiguity.";

struct RawRun {
  std::string timeout;
  std::string signal = "TERM";
  std::string kill_after = "10s";
  std::string leftovers = "kill";
};

// CLI11 2.1 cannot say that COMMAND follows "--"; this says it.
class RunFormatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App*, std::string) const override
  {
    return "Usage: treeguard run [OPTIONS] -- COMMAND [ARGS...]\n";
  }
};

// CLI11's messages can span lines; the contract wants one.
std::string one_line(std::string text)
{
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return text;
}

} // namespace

Invocation parse_command_line(const std::vector<std::string>& args)
{
  Invocation out;
  // Split at the first "--" after "run": what follows is COMMAND, verbatim,
  // never parsed as our options.
  std::vector<std::string> ours = args;
  std::vector<std::string> command;
  bool saw_separator = false;
  auto run_at = std::find(ours.begin() + (ours.empty() ? 0 : 1), ours.end(), "run");
  if (run_at != ours.end()) {
    auto separator = std::find(run_at, ours.end(), "--");
    if (separator != ours.end()) {
      saw_separator = true;
      command.assign(separator + 1, ours.end());
      ours.erase(separator, ours.end());
    }
  }

  CLI::App app(k_description, "treeguard");
  app.set_version_flag("--version", TREEGUARD_VERSION);
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()); });

  RawRun raw;
  RunOptions& run_options = out.run;
  auto* run = app.add_subcommand("run", "Run COMMAND inside a boundary and take its whole tree down");
  run->formatter(std::make_shared<RunFormatter>());
  run->footer(k_run_footer);
  run->add_option("-t,--timeout", raw.timeout,
                  "deadline for the whole run; 0 or absent = none")
    ->type_name("DURATION");
  run->add_option("-s,--signal", raw.signal,
                  "graceful stop signal (default TERM); name (TERM, SIGTERM, term) or number")
    ->type_name("SIGNAL");
  run->add_option("-k,--kill-after", raw.kill_after,
                  "grace period after the graceful signal before the forced kill (default 10s)")
    ->type_name("DURATION");
  run->add_flag("--preserve-status", run_options.policy.preserve_status,
                "on timeout, exit with COMMAND's status instead of 124");
  run->add_option("--boundary", run_options.boundary,
                  "auto (default) | cgroup | process-group (job on Windows)")
    ->type_name("KIND")
    ->check(CLI::IsMember({"auto", "cgroup", "process-group", "job"}));
  run->add_option("--cgroup-parent", run_options.cgroup_parent,
                  "create the leaf cgroup under PATH (absolute path under the cgroup2 mount, or a path "
                  "relative to the mount, e.g. /tg-tests); default: the cgroup treeguard itself is in")
    ->type_name("PATH");
  run->add_option("--leftovers", raw.leftovers,
                  "kill (default) | wait: what to do with members still alive when COMMAND exits")
    ->type_name("MODE")
    ->check(CLI::IsMember({"kill", "wait"}));
  run->add_option("--state-dir", run_options.state_dir, "state directory (else $TREEGUARD_STATE_DIR, $XDG_STATE_HOME/treeguard, "
                  "~/.local/state/treeguard)")
    ->type_name("DIR");
  run->add_flag("--keep-records", run_options.keep_records, "keep the record of a clean run");
  run->add_option("--keep-limit", run_options.keep_limit,
                  "keep at most N finished records in the state directory, the newest (default "
                  "1000); a run that keeps one removes the oldest beyond N")
    ->type_name("N")
    ->check(CLI::Validator(
      [](std::string& text) {
        return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos
                 ? std::string()
                 : std::string("must be a whole number, 0 or more");
      },
      ""));
  run->add_option("--report", run_options.report, "write a JSON report of the run to FILE")
    ->type_name("FILE");
  run->add_flag("-v,--verbose", run_options.verbose,
                "say what treeguard does, on stderr, lines starting \"treeguard: \"");

  auto* probe = app.add_subcommand("probe", "Say which boundaries this host supports, and why not");
  probe->add_flag("--json", out.probe.json, "print one JSON document instead of text");

  auto* status = app.add_subcommand("status", "List the run records in the state directory");
  status->add_flag("--json", out.status.json, "print one JSON document instead of text");
  status->add_option("--state-dir", out.status.state_dir, "state directory (as for run)")->type_name("DIR");

  auto* sweep = app.add_subcommand(
    "sweep", "Take down the boundaries of runs whose controller died (authority first)");
  sweep->add_option("RUN", out.sweep.run_id, "Only this run");
  sweep->add_option("--state-dir", out.sweep.state_dir, "state directory (as for run)")->type_name("DIR");

  auto* resolve = app.add_subcommand(
    "resolve", "Mark an ambiguous or failed run as resolved by a person, with the reason");
  resolve->add_option("RUN", out.resolve.run_id, "The run")->required();
  resolve->add_option("--why", out.resolve.why, "why the run may be considered dealt with; required, not empty")->required()->type_name("TEXT");
  resolve->add_option("--state-dir", out.resolve.state_dir, "state directory (as for run)")->type_name("DIR");

  // CLI11 wants argv as C strings, program name first, in reverse order.
  std::vector<std::string> reversed(ours.rbegin(), ours.rend());
  if (!reversed.empty()) {
    reversed.pop_back(); // argv[0]
  }
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.exit_now = true;
    // Help for the subcommand that was named, if any.
    const CLI::App* target = &app;
    for (const auto* sub : app.get_subcommands()) {
      target = sub;
    }
    out.output = target->help();
    return out;
  } catch (const CLI::CallForAllHelp&) {
    out.exit_now = true;
    out.output = app.help("", CLI::AppFormatMode::All);
    return out;
  } catch (const CLI::CallForVersion&) {
    out.exit_now = true;
    out.output = fmt::format("treeguard {}\n", TREEGUARD_VERSION);
    return out;
  } catch (const CLI::ExtrasError& e) {
    out.error = one_line(e.what());
    if (run_at != ours.end() && !saw_separator) {
      out.error = "missing '--' before COMMAND (treeguard run [OPTIONS] -- COMMAND [ARGS...])";
    }
    return out;
  } catch (const CLI::ParseError& e) {
    out.error = one_line(e.what());
    if (ours.size() > 1 && !ours[1].empty() && ours[1].front() != '-'
        && ours[1] != "run" && ours[1] != "probe" && ours[1] != "status"
        && ours[1] != "sweep" && ours[1] != "resolve") {
      out.error = fmt::format("unknown command '{}' (run, probe, status, sweep, resolve)", ours[1]);
    }
    return out;
  }

  if (run->parsed()) {
    out.command = Invocation::Command::run;
    if (!saw_separator) {
      out.error = "missing '--' before COMMAND (treeguard run [OPTIONS] -- COMMAND [ARGS...])";
      return out;
    }
    if (command.empty() || command.front().empty()) {
      out.error = "no COMMAND after '--'";
      return out;
    }
    run_options.command = std::move(command);
    if (run->count("--timeout") > 0) {
      auto timeout = parse_duration(raw.timeout);
      if (!timeout) {
        out.error = "--timeout: " + timeout.error().message();
        return out;
      }
      if (timeout->count() > 0) {
        run_options.policy.timeout = *timeout;
      }
    }
    auto kill_after = parse_duration(raw.kill_after);
    if (!kill_after) {
      out.error = "--kill-after: " + kill_after.error().message();
      return out;
    }
    run_options.policy.kill_after = *kill_after;
    auto signal = parse_signal(raw.signal);
    if (!signal) {
      out.error = "--signal: " + signal.error().message();
      return out;
    }
    if (*signal == signals::kill || *signal == signals::stop) {
      out.error = fmt::format("--signal: {} cannot be a graceful signal", signal_name(*signal));
      return out;
    }
    run_options.policy.stop_signal = *signal;
    run_options.policy.leftovers = raw.leftovers == "wait" ? Leftovers::wait : Leftovers::kill;
    if (run_options.cgroup_parent.size() > 0 && run_options.boundary == "process-group") {
      out.error = "--cgroup-parent goes with --boundary cgroup or auto";
      return out;
    }
  } else if (probe->parsed()) {
    out.command = Invocation::Command::probe;
  } else if (status->parsed()) {
    out.command = Invocation::Command::status;
  } else if (sweep->parsed()) {
    out.command = Invocation::Command::sweep;
  } else if (resolve->parsed()) {
    out.command = Invocation::Command::resolve;
    if (out.resolve.why.empty()) {
      out.error = "resolve: --why needs a reason";
    }
  } else if (saw_separator) {
    out.error = "'--' belongs after 'treeguard run [OPTIONS]'";
  }
  return out;
}

} // namespace treeguard
