// --help's layout for CLI11 (cli.cpp): wrapped to the terminal's width.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace treeguard {

// `text` with every line longer than `width` broken at spaces (a word
// longer than the width stays whole).
std::string wrap(const std::string& text, std::size_t width);

// --help at the terminal's width: descriptions wrapped in their column, the
// text around them at the whole width.
class WrappingFormatter : public CLI::Formatter {
public:
  explicit WrappingFormatter(std::size_t width);

  std::string make_option_desc(const CLI::Option* option) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;

private:
  std::size_t column_text() const;
  std::size_t m_width;
};

// CLI11 2.1 cannot say that COMMAND follows "--"; this says it.
class RunFormatter : public WrappingFormatter {
public:
  using WrappingFormatter::WrappingFormatter;
  std::string make_usage(const CLI::App*, std::string) const override;
};

}  // namespace treeguard
