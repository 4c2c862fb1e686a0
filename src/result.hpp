// Result<T>: a value or an Error, in the shape of std::expected (C++23), so
// that it can be swapped for it later. Errors keep the errno/GetLastError
// value as a std::error_code so callers can branch on it (ENOENT -> 127).
#pragma once

#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace treeguard {

// What went wrong, and where. `context` reads "<operation> <object>", for
// example "write /sys/fs/cgroup/x/cgroup.procs"; message() appends the reason.
struct Error {
  std::error_code code;
  std::string context;

  std::string message() const {
    if (!code) {
      return context;
    }
    return context.empty() ? code.message() : context + ": " + code.message();
  }
};

// An error from an errno value (POSIX) or any std::errc.
inline Error errno_error(int errno_value, std::string context) {
  return Error{std::error_code(errno_value, std::generic_category()), std::move(context)};
}

// An error with no system cause, just a sentence.
inline Error plain_error(std::string context) {
  return Error{std::error_code(), std::move(context)};
}

template <typename E>
class Unexpected {
public:
  explicit Unexpected(E error) : m_error(std::move(error)) {}
  E& error() { return m_error; }

private:
  E m_error;
};

inline Unexpected<Error> fail(Error error) {
  return Unexpected<Error>(std::move(error));
}

// A value of T, or an Error. Test with `if (!result)`, read with `*result`.
template <typename T>
class [[nodiscard]] Result {
public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {}
  Result(Unexpected<Error> error) : m_state(std::in_place_index<1>, std::move(error.error())) {}

  explicit operator bool() const { return m_state.index() == 0; }
  bool has_value() const { return m_state.index() == 0; }
  T& operator*() { return std::get<0>(m_state); }
  const T& operator*() const { return std::get<0>(m_state); }
  T* operator->() { return &std::get<0>(m_state); }
  const T* operator->() const { return &std::get<0>(m_state); }
  T& value() { return std::get<0>(m_state); }
  const Error& error() const { return std::get<1>(m_state); }

private:
  std::variant<T, Error> m_state;
};

template <>
class [[nodiscard]] Result<void> {
public:
  Result() = default;
  Result(Unexpected<Error> error) : m_error(std::move(error.error())), m_ok(false) {}

  explicit operator bool() const { return m_ok; }
  bool has_value() const { return m_ok; }
  const Error& error() const { return m_error; }

private:
  Error m_error;
  bool m_ok = true;
};

}  // namespace treeguard

// Return the error of `expression_` from the enclosing function, if any.
#define TG_TRY(expression_)                                                                        \
  do {                                                                                             \
    auto tg_result_ = (expression_);                                                               \
    if (!tg_result_) {                                                                             \
      return ::treeguard::fail(tg_result_.error());                                                \
    }                                                                                              \
  } while (false)
