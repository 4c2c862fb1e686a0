#include "nested_protocol.hpp"

#include "run_id.hpp"

#include <charconv>

namespace treeguard {

namespace {

// How many bytes of COMMAND an announcement carries at most.
constexpr std::size_t k_max_announced_command = 4 * 1024;

void append_word(std::string& line, std::string_view word) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  line += ' ';
  for (const char c : word) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f && byte != '%') {
      line += c;
    } else {
      line += '%';
      line += k_hex[byte >> 4];
      line += k_hex[byte & 0x0f];
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// The words of `line`, decoded; nullopt when one is not well encoded.
std::optional<std::vector<std::string>> words_of(std::string_view line) {
  std::vector<std::string> words;
  std::size_t at = 0;
  while (at <= line.size()) {
    std::size_t end = line.find(' ', at);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    std::string word;
    for (std::size_t i = at; i < end; ++i) {
      if (line[i] != '%') {
        word += line[i];
        continue;
      }
      const int high = i + 2 < end ? hex_value(line[i + 1]) : -1;
      const int low = i + 2 < end ? hex_value(line[i + 2]) : -1;
      if (high < 0 || low < 0) {
        return std::nullopt;
      }
      word += static_cast<char>(high * 16 + low);
      i += 2;
    }
    words.push_back(std::move(word));
    at = end + 1;
  }
  return words;
}

template <typename T>
bool number_of(const std::string& word, T& value) {
  const char* end = word.data() + word.size();
  const auto [ptr, error] = std::from_chars(word.data(), end, value);
  return !word.empty() && error == std::errc() && ptr == end;
}

}  // namespace

std::string announcement_line(const Announcement& announcement) {
  std::string line = "A";
  append_word(line, announcement.run_id);
  append_word(line, std::to_string(announcement.controller.pid));
  append_word(line, std::to_string(announcement.controller.start_time));
  append_word(line, announcement.leaf);
  append_word(line, announcement.innermost.empty() ? "-" : announcement.innermost);
  append_word(line,
              announcement.drain.signal + "/" + std::to_string(announcement.drain.kill_after_ns));
  append_word(line, announcement.cwd);
  std::size_t used = 0;
  for (std::size_t i = 0; i < announcement.command.size(); ++i) {
    const std::string& word = announcement.command[i];
    if (used + word.size() > k_max_announced_command && i > 0) {
      append_word(line, "... (" + std::to_string(announcement.command.size() - i)
                            + " more argument(s) not announced)");
      break;
    }
    append_word(line, std::string_view(word).substr(0, k_max_announced_command));
    used += word.size();
  }
  return line + "\n";
}

std::optional<Announcement> parse_announcement(std::string_view line) {
  auto words = words_of(line);
  if (!words || words->size() < 9 || (*words)[0] != "A" || !is_valid_run_id((*words)[1])) {
    return std::nullopt;
  }
  Announcement announcement;
  announcement.run_id = (*words)[1];
  if (!number_of((*words)[2], announcement.controller.pid) || announcement.controller.pid <= 0
      || !number_of((*words)[3], announcement.controller.start_time)) {
    return std::nullopt;
  }
  announcement.leaf = (*words)[4];
  announcement.innermost = (*words)[5] == "-" ? std::string() : (*words)[5];
  if (const std::string& drain = (*words)[6]; drain != "-") {
    const auto slash = drain.find('/');
    if (slash == std::string::npos || slash == 0
        || !number_of(drain.substr(slash + 1), announcement.drain.kill_after_ns)
        || announcement.drain.kill_after_ns < 0) {
      return std::nullopt;
    }
    announcement.drain.signal = drain.substr(0, slash);
  }
  announcement.cwd = (*words)[7];
  announcement.command.assign(words->begin() + 8, words->end());
  return announcement;
}

std::string answer_line(const Answer& answer) {
  std::string line;
  switch (answer.kind) {
  case Answer::Kind::taken:
    line = "G";
    append_word(line, std::to_string(answer.guardian.pid));
    append_word(line, std::to_string(answer.guardian.start_time));
    append_word(line, answer.innermost_leaf.empty() ? "-" : answer.innermost_leaf);
    break;
  case Answer::Kind::refused:
    line = "R";
    append_word(line, std::to_string(answer.exit_code));
    for (const std::string& finding : answer.lines) {
      append_word(line, finding);
    }
    break;
  case Answer::Kind::not_taken:
    line = "N";
    append_word(line, answer.why);
    break;
  }
  return line + "\n";
}

std::optional<Answer> parse_answer(std::string_view line) {
  auto words = words_of(line);
  if (!words || words->empty()) {
    return std::nullopt;
  }
  Answer answer;
  const std::string& kind = (*words)[0];
  if (kind == "G" && words->size() == 4) {
    answer.kind = Answer::Kind::taken;
    if (!number_of((*words)[1], answer.guardian.pid) || answer.guardian.pid <= 0
        || !number_of((*words)[2], answer.guardian.start_time)) {
      return std::nullopt;
    }
    answer.innermost_leaf = (*words)[3] == "-" ? std::string() : (*words)[3];
    return answer;
  }
  if (kind == "R" && words->size() >= 2) {
    answer.kind = Answer::Kind::refused;
    if (!number_of((*words)[1], answer.exit_code) || answer.exit_code <= 0) {
      return std::nullopt;
    }
    answer.lines.assign(words->begin() + 2, words->end());
    return answer;
  }
  if (kind == "N" && words->size() == 2) {
    answer.why = (*words)[1];
    return answer;
  }
  return std::nullopt;
}

std::string evidence_line(std::string_view record_json, bool durable) {
  std::string line = durable ? "E 1 " : "E 0 ";
  line += record_json;
  if (line.empty() || line.back() != '\n') {
    line += '\n';
  }
  return line;
}

std::optional<Evidence> parse_evidence(std::string_view line) {
  if (line.size() < 5 || line.substr(0, 2) != "E " || (line[2] != '0' && line[2] != '1')
      || line[3] != ' ') {
    return std::nullopt;
  }
  return Evidence{line[2] == '1', std::string(line.substr(4))};
}

std::string evidence_answer(const std::optional<std::string>& why_not) {
  if (!why_not) {
    return "K\n";
  }
  std::string line = "X";
  append_word(line, *why_not);
  return line + "\n";
}

std::optional<std::optional<std::string>> parse_evidence_answer(std::string_view line) {
  if (line == "K") {
    return std::optional<std::string>();
  }
  auto words = words_of(line);
  if (!words || words->size() != 2 || (*words)[0] != "X") {
    return std::nullopt;
  }
  return std::optional<std::string>((*words)[1]);
}

std::string held_line(std::string_view record_json) {
  std::string line = "H ";
  line += record_json;
  if (line.back() != '\n') {
    line += '\n';
  }
  return line;
}

std::optional<std::string> parse_held(std::string_view line) {
  if (line.size() < 3 || line.substr(0, 2) != "H ") {
    return std::nullopt;
  }
  return std::string(line.substr(2));
}

}  // namespace treeguard
