// The controller's handle on whoever guards its run: a guardian process of
// the run's own (guardian.cpp), or the guardian of the run whose leaf holds
// this run's leaf, announced to (guardian_nested.cpp).
#pragma once

#include "guardian.hpp"
#include "posix/unique_fd.hpp"

#include <unistd.h>

#include <optional>
#include <string_view>

namespace treeguard::platform {

// The controller's side of its guardian: the guardian's identity and the
// descriptor the guardian watches: the command pipe of a guardian of the
// run's own, or the connection to the enclosing run's guardian (NestedRuns)
// of a run nested in a leaf whose guardian guards it (no process of its own;
// announced before the run's record and leaf exist, and the record names
// that guardian as this run's: the gate and sweep leave the run to it while
// it lives). One word over it, once the run is over, dismisses the guardian.
class GuardianLink final : public Guardian {
public:
  GuardianLink(ProcessIdentity identity, std::optional<ProcessIdentity> reaper, UniqueFd watched,
               std::string_view dismissal)
      : m_identity(identity), m_reaper(reaper), m_watched(std::move(watched)),
        m_dismissal(dismissal) {}
  ~GuardianLink() override { dismiss(); }

  ProcessIdentity identity() const override { return m_identity; }
  std::optional<ProcessIdentity> reaper() const override { return m_reaper; }

  void dismiss() override {
    if (m_watched) {
      (void)::write(m_watched.get(), m_dismissal.data(), m_dismissal.size());
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
  std::string_view m_dismissal;
};

}  // namespace treeguard::platform
