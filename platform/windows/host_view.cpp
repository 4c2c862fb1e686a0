// The HostView of port/host_view.hpp on Windows: liveness by pid and creation
// time, emptiness from the recorded job (takedown.cpp), and a boot id made from
// the boot time the kernel reports, in the UUID shape records carry, and the
// machine id from the registry's MachineGuid.
#include "port/host_view.hpp"

#include "port/takedown.hpp"
#include "run_id.hpp"
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

// When this boot began (the kernel's BootTime, a FILETIME: 100 ns since
// 1601), or nullopt. Under Wine: when the wineserver started.
std::optional<unsigned long long> boot_filetime() {
  using Query = LONG(WINAPI*)(int, void*, ULONG, ULONG*);
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  auto query = ntdll ? reinterpret_cast<Query>(
                   reinterpret_cast<void*>(::GetProcAddress(ntdll, "NtQuerySystemInformation")))
                     : nullptr;
  TimeOfDay info{};
  if (query == nullptr
      || query(3 /* SystemTimeOfDayInformation */, &info, sizeof info, nullptr) != 0) {
    return std::nullopt;
  }
  return static_cast<unsigned long long>(info.boot_time.QuadPart);
}

std::string windows_boot_id(std::optional<unsigned long long> boot) {
  if (!boot) {
    return "";
  }
  return fmt::format("{:08x}-{:04x}-{:04x}-0000-000000000000", *boot >> 32, (*boot >> 16) & 0xffff,
                     *boot & 0xffff);
}

std::optional<std::int64_t> unix_ns(std::optional<unsigned long long> filetime) {
  constexpr unsigned long long k_unix_epoch = 116444736000000000ULL;  // 1970 in FILETIME
  if (!filetime || *filetime < k_unix_epoch) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>((*filetime - k_unix_epoch) * 100);
}

// The machine's identity: the registry's MachineGuid (HKLM, key
// SOFTWARE\Microsoft\Cryptography, the 64-bit view), lowercased; "" if
// absent or not one.
std::string windows_machine_id() {
  wchar_t value[80] = {};
  DWORD size = sizeof value;
  if (::RegGetValueW(HKEY_LOCAL_MACHINE, L"SOFTWARE\\Microsoft\\Cryptography", L"MachineGuid",
                     RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY, nullptr, value, &size)
      != ERROR_SUCCESS) {
    return "";
  }
  std::string id = platform::narrow(value);
  for (char& c : id) {
    if (c >= 'A' && c <= 'F') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return is_valid_machine_id(id) ? id : std::string();
}

class WindowsHostView final : public HostView {
public:
  WindowsHostView()
      : m_boot_id(windows_boot_id(boot_filetime())), m_machine_id(windows_machine_id()),
        m_boot_began_at(unix_ns(boot_filetime())) {}
  std::string boot_id() const override { return m_boot_id; }
  std::string machine_id() const override { return m_machine_id; }
  std::optional<std::int64_t> boot_began_at() const override { return m_boot_began_at; }
  bool process_alive(long pid, unsigned long long start_time) const override {
    return pid > 0 && platform::process_alive(static_cast<DWORD>(pid), start_time);
  }
  std::optional<bool> boundary_empty(const RunRecord& record) const override {
    return recorded_boundary(record)->empty();
  }
  // A recorded job does not list its processes from here (takedown.cpp):
  // an empty one holds none, any other cannot be named.
  std::optional<std::vector<MemberInfo>> alive_in_boundary(const RunRecord& record) const override {
    if (recorded_boundary(record)->empty() == std::optional<bool>(true)) {
      return std::vector<MemberInfo>{};
    }
    return std::nullopt;
  }

private:
  std::string m_boot_id;
  std::string m_machine_id;
  std::optional<std::int64_t> m_boot_began_at;
};

}  // namespace

std::unique_ptr<HostView> make_host_view() {
  return std::make_unique<WindowsHostView>();
}

}  // namespace treeguard
