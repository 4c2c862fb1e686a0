#include "port/probe.hpp"

#include "port/boundary.hpp"
#include "windows/win_util.hpp"

#include <fmt/format.h>

namespace treeguard {

using platform::UniqueHandle;

std::vector<std::string> fallback_advice() {
  return {};
}

ProbeReport probe_host() {
  ProbeReport report;
  auto add = [&](std::string name, bool ok, std::string detail) {
    report.items.push_back(ProbeItem{std::move(name), ok, std::move(detail)});
  };
  OSVERSIONINFOW version{};
  version.dwOSVersionInfoSize = sizeof version;
  using GetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  auto get_version = ntdll ? reinterpret_cast<GetVersionFn>(
                         reinterpret_cast<void*>(::GetProcAddress(ntdll, "RtlGetVersion")))
                           : nullptr;
  if (get_version != nullptr && get_version(&version) == 0) {
    std::string detail = fmt::format("Windows {}.{} build {}", version.dwMajorVersion,
                                     version.dwMinorVersion, version.dwBuildNumber);
    if (ntdll != nullptr && ::GetProcAddress(ntdll, "wine_get_version") != nullptr) {
      detail += " (Wine)";
    }
    add("system", true, detail);
  }
  // Try what a run does: a job with kill-on-close and no breakaway.
  UniqueHandle job(::CreateJobObjectW(nullptr, nullptr));
  bool limits = false;
  std::string why;
  if (!job) {
    why = platform::last_error("CreateJobObject").message();
  } else {
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION info{};
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    limits =
        ::SetInformationJobObject(job.get(), JobObjectExtendedLimitInformation, &info, sizeof info)
        != FALSE;
    if (!limits) {
      why = platform::last_error("SetInformationJobObject").message();
    }
  }
  add("job objects", limits, limits ? "kill-on-close, no breakaway, completion port" : why);
  BOOL in_job = FALSE;
  ::IsProcessInJob(::GetCurrentProcess(), nullptr, &in_job);
  add("treeguard in a job", true, in_job ? "yes: COMMAND's job nests in it (Windows 8+)" : "no");
  add("cgroup v2 writable", false, "Linux only");
  add("process groups with a subreaper", false, "Linux only");
  // What --boundary auto forms here: the run's own plan.
  BoundaryOptions options;
  options.run_id = "RUNID";
  set_plan(report, plan_boundary(options));
  return report;
}

}  // namespace treeguard
