// fmt's out-of-line part, compiled once for the whole program.
//
// Every other file includes <fmt/format.h> without FMT_HEADER_ONLY, which leaves these functions
// declared only. In header-only mode each of treeguard's ~90 files compiled them again (about 40%
// of a file's compile: run_command.cpp 14.4 s -> 8.3 s). Linking Debian's libfmt is no option:
// it ships only a shared library, and the binary is static (one less library to load per run).
// Including format-inl.h here defines them (FMT_FUNC is empty outside header-only mode); the
// templates that format.h declares extern, and those it leaves to the library, are instantiated
// below for the one character type treeguard formats.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;

}  // namespace detail
FMT_END_NAMESPACE
