// The HostView of gate.hpp on Windows: liveness by pid and creation time,
// emptiness from the recorded job (takedown.cpp), and a boot id made from
// the boot time the kernel reports, in the UUID shape records carry.
#include "gate.hpp"
#include "takedown.hpp"
#include "windows/win_util.hpp"

#include <fmt/format.h>

#include <winternl.h>

namespace treeguard {

namespace {

// SystemTimeOfDayInformation: BootTime is fixed for the life of the boot
// (unlike now - GetTickCount64, which jitters).
struct TimeOfDay {
  LARGE_INTEGER boot_time;
  LARGE_INTEGER current_time;
  LARGE_INTEGER time_zone_bias;
  ULONG time_zone_id;
  ULONG reserved;
  ULONGLONG boot_time_bias;
  ULONGLONG sleep_time_bias;
};

std::string windows_boot_id() {
  using Query = LONG(WINAPI*)(int, void*, ULONG, ULONG*);
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  auto query = ntdll ? reinterpret_cast<Query>(
                   reinterpret_cast<void*>(::GetProcAddress(ntdll, "NtQuerySystemInformation")))
                     : nullptr;
  TimeOfDay info{};
  if (query == nullptr
      || query(3 /* SystemTimeOfDayInformation */, &info, sizeof info, nullptr) != 0) {
    return "";
  }
  const auto boot = static_cast<unsigned long long>(info.boot_time.QuadPart);
  return fmt::format("{:08x}-{:04x}-{:04x}-0000-000000000000", boot >> 32, (boot >> 16) & 0xffff,
                     boot & 0xffff);
}

class WindowsHostView final : public HostView {
public:
  WindowsHostView() : m_boot_id(windows_boot_id()) {}
  std::string boot_id() const override { return m_boot_id; }
  bool process_alive(long pid, unsigned long long start_time) const override {
    return pid > 0 && platform::process_alive(static_cast<DWORD>(pid), start_time);
  }
  std::optional<bool> boundary_empty(const RunRecord& record) const override {
    return recorded_boundary_empty(record);
  }

private:
  std::string m_boot_id;
};

}  // namespace

std::unique_ptr<HostView> make_host_view() {
  return std::make_unique<WindowsHostView>();
}

}  // namespace treeguard
