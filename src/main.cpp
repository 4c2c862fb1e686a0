// treeguard: run a command, and when it is over, nothing it started is
// still running. main parses, dispatches and maps outcomes to exit codes;
// it is the only place that catches exceptions.
#include "cli.hpp"
#include "evidence_commands.hpp"
#include "port/boundary.hpp"
#include "port/host.hpp"
#include "port/probe.hpp"
#include "printable.hpp"
#include "run_command.hpp"
#include "state_dir.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace treeguard;
  host_init();
  try {
    std::vector<std::string> args = host_arguments(argc, argv);
    Invocation invocation = parse_command_line(args, process_environment, terminal_columns());
    if (invocation.exit_now) {
      fmt::print("{}", invocation.output);
      return 0;
    }
    if (invocation.error && invocation.run.timeout_program) {
      // timeout's words: the reason (none for a missing operand), then where help is.
      const std::string& program = *invocation.run.timeout_program;
      if (!invocation.error->empty()) {
        fmt::print(stderr, "{}: {}\n", program, escaped(*invocation.error));
      }
      fmt::print(stderr, "Try '{} --help' for more information.\n", program);
      return 125;
    }
    if (invocation.error) {
      // One line whatever a value held (TREEGUARD_TIMEOUT=$'5\nx').
      fmt::print(stderr, "treeguard: error: {}\n", escaped(*invocation.error));
      return 125;
    }
    switch (invocation.command) {
    case Invocation::Command::run:
      return command_run(invocation.run);
    case Invocation::Command::probe: {
      ProbeReport report = probe_host();
      // Where `treeguard run` would keep its records, and why there.
      auto state_dir = open_state_dir(std::nullopt);
      report.items.push_back(
          state_dir
              ? ProbeItem{"state directory", true,
                          fmt::format("{} (from {})", state_dir->path.string(), state_dir->source)}
              : ProbeItem{"state directory", false, state_dir.error().message()});
      print_probe(report, invocation.probe.json, stdout);
      return 0;
    }
    case Invocation::Command::status:
      return command_status(invocation.status);
    case Invocation::Command::sweep:
      return command_sweep(invocation.sweep);
    case Invocation::Command::resolve:
      return command_resolve(invocation.resolve);
    case Invocation::Command::none:
      break;
    }
    fmt::print(stderr, "treeguard: error: no command given (run, probe, status, sweep, resolve)\n");
    return 125;
  } catch (const std::bad_alloc&) {
    std::fputs("treeguard: error: out of memory\n", stderr);
    return 125;
  } catch (const std::exception& e) {
    fmt::print(stderr, "treeguard: error: {}\n", e.what());
    return 125;
  }
}
