#include "host.hpp"

#include "linux/signals.hpp"

#include <fmt/format.h>

#include <ctime>
#include <sys/random.h>
#include <unistd.h>

namespace treeguard {

void host_init()
{
  platform::block_signals();
}

std::string new_run_id()
{
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  unsigned short random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random) {
    random = static_cast<unsigned short>(::getpid() ^ now);
  }
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}-{}-{:04x}", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     ::getpid(), random);
}

} // namespace treeguard
