// The controller's handle on a guardian process of the run's own
// (guardian.cpp). A run taken by the enclosing run's guardian holds another
// handle (guardian_nested.cpp).
#pragma once

#include "port/guardian.hpp"
#include "posix/unique_fd.hpp"

#include <unistd.h>

#include <optional>

namespace treeguard::platform {

// The controller's side of its guardian: the guardian's identity and the
// command pipe it watches. One word over it ("D"), once the run is over,
// dismisses the guardian.
class GuardianLink final : public Guardian {
public:
  GuardianLink(ProcessIdentity identity, std::optional<ProcessIdentity> reaper, UniqueFd watched)
      : m_identity(identity), m_reaper(reaper), m_watched(std::move(watched)) {}
  ~GuardianLink() override { dismiss(); }

  ProcessIdentity identity() const override { return m_identity; }
  std::optional<ProcessIdentity> reaper() const override { return m_reaper; }

  void dismiss() override {
    if (m_watched) {
      (void)::write(m_watched.get(), "D", 1);
      m_watched.reset();
    }
  }

  // The descriptor stays open, unwritten, until this process ends: its end
  // is the guardian's "gone" (it takes the run down as lost), and the
  // destructor has nothing left to dismiss.
  void keep_armed() override { (void)m_watched.release(); }

private:
  ProcessIdentity m_identity;
  std::optional<ProcessIdentity> m_reaper;
  UniqueFd m_watched;
};

}  // namespace treeguard::platform
