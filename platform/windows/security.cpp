#include "windows/security.hpp"

#include "windows/win_util.hpp"

#include <aclapi.h>
#include <sddl.h>

#include <vector>

namespace treeguard::platform {

namespace {

// A TOKEN_INFORMATION_CLASS of this process's token, as raw bytes.
std::vector<char> token_information(TOKEN_INFORMATION_CLASS kind) {
  HANDLE raw = nullptr;
  if (!::OpenProcessToken(::GetCurrentProcess(), TOKEN_QUERY, &raw)) {
    return {};
  }
  UniqueHandle token(raw);
  DWORD size = 0;
  ::GetTokenInformation(token.get(), kind, nullptr, 0, &size);
  std::vector<char> out(size);
  if (size == 0 || !::GetTokenInformation(token.get(), kind, out.data(), size, &size)) {
    return {};
  }
  return out;
}

std::string sid_text(PSID sid) {
  char* text = nullptr;
  if (sid == nullptr || !::ConvertSidToStringSidA(sid, &text)) {
    return "?";
  }
  std::string out(text);
  ::LocalFree(text);
  return out;
}

}  // namespace

Result<void> check_owned_by_current_user(HANDLE handle, const std::string& what) {
  PSID owner = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  DWORD error = ::GetSecurityInfo(handle, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &owner,
                                  nullptr, nullptr, nullptr, &descriptor);
  if (error != ERROR_SUCCESS) {
    return fail(windows_error(error, "read the owner of " + what));
  }
  bool mine = false;
  auto user = token_information(TokenUser);
  if (!user.empty()) {
    mine = ::EqualSid(owner, reinterpret_cast<TOKEN_USER*>(user.data())->User.Sid) != FALSE;
  }
  if (!mine) {
    auto default_owner = token_information(TokenOwner);
    if (!default_owner.empty()) {
      mine =
          ::EqualSid(owner, reinterpret_cast<TOKEN_OWNER*>(default_owner.data())->Owner) != FALSE;
    }
  }
  std::string found = sid_text(owner);
  ::LocalFree(descriptor);
  if (!mine) {
    return fail(plain_error(what + ": owned by " + found + ", not by the current user"));
  }
  return {};
}

std::string current_user_sid_label() {
  auto user = token_information(TokenUser);
  if (user.empty()) {
    return "sid ?";
  }
  return "sid " + sid_text(reinterpret_cast<TOKEN_USER*>(user.data())->User.Sid);
}

}  // namespace treeguard::platform
