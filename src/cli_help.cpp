#include "cli_help.hpp"

#include <algorithm>
#include <sstream>

namespace treeguard {

std::string wrap(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (line.size() > width) {
      std::size_t cut = line.rfind(' ', width);
      if (cut == std::string::npos || cut == 0) {
        cut = line.find(' ', width);
        if (cut == std::string::npos) {
          break;
        }
      }
      out += line.substr(0, cut) + "\n";
      line.erase(0, cut + 1);
    }
    out += line;
    if (end == std::string::npos) {
      break;
    }
    out += "\n";
    start = end + 1;
  }
  return out;
}

WrappingFormatter::WrappingFormatter(std::size_t width)
    : m_width(std::max<std::size_t>(width, 40)) {}

std::string WrappingFormatter::make_option_desc(const CLI::Option* option) const {
  return wrap(CLI::Formatter::make_option_desc(option), column_text());
}

std::string WrappingFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_name(), wrap(sub->get_description(), column_text()),
                           get_column_width());
  return out.str();
}

std::string WrappingFormatter::make_description(const CLI::App* app) const {
  return wrap(CLI::Formatter::make_description(app), m_width);
}

std::string WrappingFormatter::make_footer(const CLI::App* app) const {
  return wrap(CLI::Formatter::make_footer(app), m_width);
}

std::size_t WrappingFormatter::column_text() const {
  return m_width - std::min(m_width - 20, get_column_width());
}

std::string RunFormatter::make_usage(const CLI::App*, std::string) const {
  return "Usage: treeguard run [OPTIONS] [--] COMMAND [ARGS...]\n";
}

}  // namespace treeguard
