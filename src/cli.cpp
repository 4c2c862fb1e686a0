#include "cli.hpp"

#include "cli_help.hpp"
#include "duration.hpp"
#include "named_options.hpp"
#include "printable.hpp"
#include "signal_name.hpp"
#include "timeout_cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace treeguard {

namespace {

constexpr const char* k_description =
    "treeguard runs a command inside a containment boundary (on Linux a cgroup v2\n"
    "leaf, or a process group with a subreaper) and, when the command is over,\n"
    "takes down every process it started and proves it.";

constexpr const char* k_run_footer =
    "Exit status: COMMAND's own; 128+N if it died of signal N or a stop request\n"
    "(a second signal N) stopped the run, and treeguard then ends by signal N itself;\n"
    "124 deadline passed; 125 treeguard could not start\n"
    "COMMAND; 126 not executable; 127 not found; 120 COMMAND exited 0 and left\n"
    "processes behind (--leftovers fail); 121 dispatch refused (an\n"
    "unresolved run blocks the state directory); 122 fail-closed ambiguity.\n"
    "\n"
    "Environment (a flag wins): TREEGUARD_TIMEOUT, TREEGUARD_KILL_AFTER,\n"
    "TREEGUARD_SIGNAL, TREEGUARD_BOUNDARY, TREEGUARD_CGROUP_PARENT,\n"
    "TREEGUARD_LEFTOVERS, TREEGUARD_MEMORY_MAX, TREEGUARD_PIDS_MAX, TREEGUARD_STATE_DIR;\n"
    "XDG_STATE_HOME, HOME, XDG_RUNTIME_DIR for the state directory.\n"
    "\n"
    "SIZE: bytes, or a number with K, M, G or T (powers of 1024): 512M, 2G; max = none.\n"
    "A limit the boundary cannot enforce (process-group; a cgroup without the memory\n"
    "or pids controller) is exit 125, nothing launched. --report FILE gives the tree's\n"
    "\"usage\" (CPU seconds, memory and tasks peak; from the cgroup leaf, else the\n"
    "reaped processes' rusage) and \"oom_kills\"; -v ends with a line of it.";

// CLI11's messages can span lines; the contract wants one.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return text;
}

// `arg` is one of run's options whose value is the next argument ("-t 5",
// "--timeout 5"; not "--timeout=5", "-t5" or a flag).
bool takes_separate_value(const CLI::App& run, const std::string& arg) {
  std::string name = arg;
  if (arg.rfind("--", 0) == 0) {
    if (arg.find('=') != std::string::npos) {
      return false;
    }
  } else if (arg.size() == 2) {
    name = arg;
  } else {
    // A cluster of short flags ("-vq"), or a short option with its value
    // attached ("-t5"): only a last letter that wants a value takes the next.
    name = std::string("-") + arg.back();
    const CLI::Option* first = run.get_option_no_throw(std::string("-") + arg[1]);
    if (first != nullptr && first->get_items_expected_min() > 0) {
      return false;  // "-t5"
    }
  }
  const CLI::Option* option = run.get_option_no_throw(name);
  return option != nullptr && option->get_items_expected_min() > 0;
}

// "did you mean: treeguard run ARGS..." for a command line that forgot `run`.
std::string with_run(const std::vector<std::string>& args) {
  std::string out = "did you mean: treeguard run";
  for (std::size_t i = 1; i < args.size(); ++i) {
    out += " " + shell_quoted(args[i]);
  }
  return out;
}

// CLI11's messages in treeguard's voice: what was wrong, with the option's
// name, in one line.
std::string in_our_voice(const CLI::ParseError& error) {
  std::string text = one_line(error.what());
  const std::string at_most = ": At Most ";
  if (auto at = text.find(at_most); at != std::string::npos) {
    const std::string name = text.substr(0, at);
    const auto received = text.rfind(' ');
    return fmt::format("{} given {} times; it takes one value", name, text.substr(received + 1));
  }
  if (auto at = text.find(": 1 required "); at != std::string::npos && text.size() > 8
                                            && text.compare(text.size() - 8, 8, " missing") == 0) {
    return text.substr(0, at) + " needs a value";  // "--state-dir: 1 required DIR missing"
  }
  const std::string expected = "Expected exactly 1 arguments to ";
  if (text.rfind(expected, 0) == 0) {
    const auto comma = text.find(", got", expected.size());
    return text.substr(expected.size(), comma - expected.size()) + " needs a value";
  }
  const std::string not_expected = "was not expected: ";
  if (auto at = text.find(not_expected); at != std::string::npos) {
    const std::string what = text.substr(at + not_expected.size());
    return (what.rfind('-', 0) == 0 ? "unknown option " : "unexpected argument ") + what;
  }
  const std::string required = " is required";
  if (text.size() > required.size()
      && text.compare(text.size() - required.size(), required.size(), required) == 0) {
    return text.substr(0, text.size() - required.size()) + " is missing";
  }
  return text;
}

}  // namespace

namespace {

// The options of `run` that `named` names, declared on its subcommand: flags
// land in `options`, text to be checked later (it may come from the
// environment) in `raw`.
void declare_run_options(CLI::App& run, const NamedOptions& named, RunOptions& options,
                         RawRun& raw) {
  if (named("-t,--timeout")) {
    run.add_option("-t,--timeout", raw.timeout, "deadline for the whole run; 0 or absent = none")
        ->type_name("DURATION");
  }
  if (named("-s,--signal")) {
    run.add_option("-s,--signal", raw.signal,
                   "graceful stop signal (default TERM); name (TERM, SIGTERM, term) or number; "
                   "KILL: no grace, straight to the forced kill")
        ->type_name("SIGNAL");
  }
  if (named("-k,--kill-after")) {
    run.add_option("-k,--kill-after", raw.kill_after,
                   "grace period after the graceful signal before the forced kill (default 10s; "
                   "0 = no forced kill while COMMAND runs, as timeout; then 1s for its leftovers)")
        ->type_name("DURATION");
  }
  if (named("--preserve-status")) {
    run.add_flag("--preserve-status", options.policy.preserve_status,
                 "on timeout, exit with COMMAND's status instead of 124");
  }
  if (named("--boundary")) {
    run.add_option("--boundary", raw.boundary,
                   "auto (default) | cgroup | process-group | pid-namespace (opt-in; job on "
                   "Windows, where built)")
        ->type_name("KIND")
        // The values are in the description: listed in the type too, the
        // option's first line would not fit 60 columns.
        ->check(CLI::IsMember(boundary_request_names()).description(""));
  }
  if (named("--cgroup-parent")) {
    run.add_option(
           "--cgroup-parent", options.cgroup_parent,
           "create the leaf cgroup under PATH (absolute path under the cgroup2 mount, or a path "
           "relative to the mount, e.g. /tg-tests); default: the cgroup treeguard itself is in")
        ->type_name("PATH");
  }
  if (named("--memory-max")) {
    run.add_option("--memory-max", raw.memory_max,
                   "limit the whole tree's memory to SIZE (cgroup memory.max, swap 0); an OOM "
                   "kill inside is reported; max = no limit")
        ->type_name("SIZE");
  }
  if (named("--pids-max")) {
    run.add_option("--pids-max", raw.pids_max,
                   "limit the whole tree to N tasks at once (cgroup pids.max); max = no limit")
        ->type_name("N");
  }
  if (named("--leftovers")) {
    run.add_option("--leftovers", raw.leftovers,
                   "kill (default) | wait | outer | fail: what to do with members still alive "
                   "when COMMAND exits (wait: until the deadline, if any; outer: hand them to the "
                   "enclosing treeguard run; on Windows they stay in its job, in which this run's "
                   "job is nested; fail: take them down as kill does, and exit 120 if COMMAND "
                   "exited 0)")
        ->type_name("MODE")
        ->check(CLI::IsMember(k_leftover_modes));
  }
  if (named("--state-dir")) {
    run.add_option("--state-dir", options.state_dir,
                   "state directory (else $TREEGUARD_STATE_DIR, $XDG_STATE_HOME/treeguard, "
                   "~/.local/state/treeguard, $XDG_RUNTIME_DIR/treeguard, the account's home, "
                   "/run/user/UID/treeguard, /run/treeguard (root), /tmp/treeguard-UID)")
        ->type_name("DIR");
  }
  if (named("--keep-records")) {
    run.add_flag("--keep-records", options.keep_records, "keep the record of a clean run");
  }
  if (named("--keep-limit")) {
    run.add_option("--keep-limit", options.keep_limit,
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
  }
  if (named("--report")) {
    run.add_option("--report", options.report, "write a JSON report of the run to FILE")
        ->type_name("FILE");
  }
  if (named("-v,--verbose")) {
    run.add_flag("-v,--verbose", options.verbose,
                 "say what treeguard does, on stderr, lines starting \"treeguard: \"");
  }
  if (named("-q,--quiet")) {
    run.add_flag("-q,--quiet", options.quiet,
                 "no line on stderr when the deadline ends the run, members are force-killed or "
                 "COMMAND left processes behind");
  }
}

// The evidence commands' options; they take nothing from the environment.
void declare_evidence_commands(CLI::App& app, Invocation& out) {
  auto* probe = app.add_subcommand("probe", "Say which boundaries this host supports, and why not");
  probe->add_flag("--json", out.probe.json, "print one JSON document instead of text");

  auto* status = app.add_subcommand("status", "List the run records in the state directory");
  status->add_option("RUN", out.status.run_id, "Only this run, with the members it names");
  status->add_flag("--json", out.status.json, "print one JSON document instead of text");
  status->add_option("--state-dir", out.status.state_dir, "state directory (as for run)")
      ->type_name("DIR");

  auto* sweep = app.add_subcommand(
      "sweep", "Take down the boundaries of runs whose controller died (authority first)");
  sweep->add_option("RUN", out.sweep.run_id, "Only this run");
  sweep->add_option("--state-dir", out.sweep.state_dir, "state directory (as for run)")
      ->type_name("DIR");

  auto* resolve = app.add_subcommand(
      "resolve", "Mark an ambiguous or failed run as resolved by a person, with the reason");
  resolve->add_option("RUN", out.resolve.run_id, "The run")->required();
  resolve
      ->add_option("--why", out.resolve.why,
                   "why the run may be considered dealt with; required, not empty")
      ->required()
      ->type_name("TEXT");
  resolve->add_option("--state-dir", out.resolve.state_dir, "state directory (as for run)")
      ->type_name("DIR");
}

// argv split in two: what CLI11 parses, and COMMAND.
struct CommandSplit {
  std::vector<std::string> ours;
  std::vector<std::string> command;
  bool saw_command = false;
  std::optional<std::string> error;
};

// COMMAND is everything from the first argument after "run" that is not
// one of our options (as timeout(1): `treeguard run -t 5 make`), or
// everything after a "--" that comes before it. It is never parsed as our
// options: `treeguard run ls -l` runs `ls -l`.
CommandSplit split_command(const std::vector<std::string>& args, const CLI::App& run) {
  CommandSplit out;
  out.ours = args;
  std::vector<std::string>& ours = out.ours;
  auto run_at = std::find(ours.begin() + (ours.empty() ? 0 : 1), ours.end(), "run");
  if (run_at == ours.end()) {
    return out;
  }
  for (auto it = run_at + 1; it != ours.end(); ++it) {
    const std::string& arg = *it;
    if (arg == "--") {
      out.saw_command = true;
      out.command.assign(it + 1, ours.end());
      ours.erase(it, ours.end());
      break;
    }
    if (arg.size() > 1 && arg.front() == '-') {
      if (takes_separate_value(run, arg) && it + 1 != ours.end()) {
        if (*(it + 1) == "--") {
          // `--report -- make` would take "--" for the file's name.
          out.error = fmt::format("{} needs a value before '--'", arg);
          return out;
        }
        ++it;
      }
      continue;
    }
    out.saw_command = true;
    out.command.assign(it, ours.end());
    ours.erase(it, ours.end());
    break;
  }
  return out;
}

// A CLI11 parse error explained: in our voice, and for a command line that
// forgot `run`, the line it meant.
std::string explain_parse_error(const CLI::ParseError& error, const CLI::App& app,
                                const CLI::App& run, const std::vector<std::string>& args) {
  const bool named = !app.get_subcommands().empty();
  if (named) {
    return in_our_voice(error);
  }
  if (args.size() <= 1 || args[1].empty()) {
    return "a command is required: run, probe, status, sweep or resolve";
  }
  const std::string& first = args[1];
  if (first == "run" || first == "probe" || first == "status" || first == "sweep"
      || first == "resolve") {
    return "a command is required: run, probe, status, sweep or resolve";
  }
  // `treeguard -t 5 sleep 1`, `treeguard make`: `run` forgotten.
  const bool option = first.front() == '-';
  const std::string name =
      first.rfind("--", 0) == 0 ? first.substr(0, first.find('=')) : first.substr(0, 2);
  if (!option) {
    return fmt::format("unknown command '{}' (run, probe, status, sweep, resolve); {}", first,
                       with_run(args));
  }
  if (run.get_option_no_throw(name) != nullptr) {
    return fmt::format("{} is an option of run; {}", name, with_run(args));
  }
  return fmt::format("unknown option {}", first);
}

// `run`'s COMMAND and options, resolved against the environment.
void resolve_run(const CLI::App& run, const CommandSplit& split,
                 const EnvironmentLookup& environment, RawRun& raw, Invocation& out) {
  out.command = Invocation::Command::run;
  if (!split.saw_command) {
    out.error = "no COMMAND (treeguard run [OPTIONS] [--] COMMAND [ARGS...])";
    return;
  }
  if (split.command.empty() || split.command.front().empty()) {
    out.error = "no COMMAND after '--'";
    return;
  }
  out.run.command = split.command;
  const OptionGiven given = [&run](const char* option) {
    const CLI::Option* declared = run.get_option_no_throw(option);
    return declared != nullptr && declared->count() > 0;
  };
  out.error = resolve_run_environment(given, environment, raw, out.run);
  if (!out.error) {
    out.error = resolve_run_timing(given, environment, raw, out.run.policy);
  }
}

// --help (for the subcommand named, if any), --help-all, --version.
void print_on_request(const CLI::App& app, std::string text, Invocation& out) {
  out.exit_now = true;
  out.output = text.empty() ? app.help() : std::move(text);
}

Invocation parse_treeguard_command_line(const std::vector<std::string>& args,
                                        const EnvironmentLookup& environment,
                                        std::size_t help_width) {
  Invocation out;
  const NamedOptions named(args);
  CLI::App app(k_description, "treeguard");
  app.formatter(std::make_shared<WrappingFormatter>(help_width));
  if (named("--version")) {
    app.set_version_flag("--version", TREEGUARD_VERSION);
  }
  if (!named.all()) {
    app.set_help_flag();  // (and none for run, which takes its parent's)
  }
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()); });

  RawRun raw;
  auto* run =
      app.add_subcommand("run", "Run COMMAND inside a boundary and take its whole tree down");
  run->formatter(std::make_shared<RunFormatter>(help_width));
  run->footer(k_run_footer);
  if (named("--version")) {
    run->set_version_flag("--version", TREEGUARD_VERSION);
  }
  declare_run_options(*run, named, out.run, raw);
  // When `run` comes first, nothing else can be named (what follows is
  // run's options and COMMAND): the other commands are not declared.
  if (args.size() < 2 || args[1] != "run") {
    app.add_subcommand("timeout", k_timeout_summary);
    declare_evidence_commands(app, out);
  }

  CommandSplit split = split_command(args, *run);
  if (split.error) {
    out.error = split.error;
    return out;
  }
  // CLI11 wants argv as C strings, program name first, in reverse order.
  std::vector<std::string> reversed(split.ours.rbegin(), split.ours.rend());
  if (!reversed.empty()) {
    reversed.pop_back();  // argv[0]
  }
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    // Help for the subcommand that was named, if any.
    const CLI::App* target = &app;
    for (const auto* sub : app.get_subcommands()) {
      target = sub;
    }
    print_on_request(*target, "", out);
    return out;
  } catch (const CLI::CallForAllHelp&) {
    print_on_request(app, app.help("", CLI::AppFormatMode::All), out);
    return out;
  } catch (const CLI::CallForVersion&) {
    print_on_request(app, fmt::format("treeguard {}\n", TREEGUARD_VERSION), out);
    return out;
  } catch (const CLI::ParseError& e) {
    out.error = explain_parse_error(e, app, *run, args);
    return out;
  }

  if (run->parsed()) {
    resolve_run(*run, split, environment, raw, out);
  } else if (app.got_subcommand("probe")) {
    out.command = Invocation::Command::probe;
  } else if (app.got_subcommand("status")) {
    out.command = Invocation::Command::status;
  } else if (app.got_subcommand("sweep")) {
    out.command = Invocation::Command::sweep;
  } else if (app.got_subcommand("resolve")) {
    out.command = Invocation::Command::resolve;
    if (out.resolve.why.empty()) {
      out.error = "resolve: --why needs a reason";
    }
  } else if (std::find(args.begin(), args.end(), "--") != args.end()) {
    out.error = "'--' belongs after 'treeguard run [OPTIONS]'";
  }
  return out;
}

}  // namespace

Invocation parse_command_line(const std::vector<std::string>& args,
                              const EnvironmentLookup& environment, std::size_t help_width) {
  if (auto program = timeout_program(args)) {
    return parse_timeout_command_line(args, *program, environment);
  }
  return parse_treeguard_command_line(args, environment, help_width);
}

}  // namespace treeguard
