#pragma once
#include <string>
#include <vector>

std::size_t count_words(const std::string& text);
std::string join_words(const std::vector<std::string>& words, const std::string& separator);
