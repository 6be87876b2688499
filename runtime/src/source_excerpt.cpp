#include "source_excerpt.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace fuseflow::detail {
namespace {

constexpr std::size_t context_lines = 2;  // shown before and after each reported line
constexpr std::size_t max_reports = 10;   // past this, the log itself is enough

struct Report {
  std::string file;
  std::size_t line;
  bool operator<(const Report& other) const {
    return std::tie(file, line) < std::tie(other.file, other.line);
  }
};

// "name.cu(41): error: ..." -> {name.cu, 41}
std::optional<Report> parse_report(std::string_view log_line) {
  const std::size_t open = log_line.find('(');
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  std::size_t pos = open + 1, line = 0;
  while (pos < log_line.size() && log_line[pos] >= '0' && log_line[pos] <= '9')
    line = line * 10 + static_cast<std::size_t>(log_line[pos++] - '0');
  if (pos == open + 1 || log_line.substr(pos, 3) != "): " || line == 0) return std::nullopt;
  return Report{std::string(log_line.substr(0, open)), line};
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string excerpt_of(const Report& report, std::string_view text) {
  const std::vector<std::string_view> lines = split_lines(text);
  if (report.line > lines.size()) return {};
  const std::size_t first = report.line > context_lines ? report.line - context_lines : 1;
  const std::size_t last = std::min(lines.size(), report.line + context_lines);
  const std::size_t width = std::to_string(last).size();
  std::string out = report.file + ":" + std::to_string(report.line) + ":\n";
  for (std::size_t n = first; n <= last; ++n) {
    std::string number = std::to_string(n);
    out += n == report.line ? "> " : "  ";
    out += std::string(width - number.size(), ' ') + number + " | ";
    out += lines[n - 1];
    out += '\n';
  }
  return out;
}

}  // namespace

std::string source_excerpt(std::string_view log, std::string_view program_name,
                           std::string_view source, std::span<const Header> headers) {
  std::set<Report> seen;
  std::string out;
  for (std::string_view log_line : split_lines(log)) {
    std::optional<Report> report = parse_report(log_line);
    if (!report || seen.size() >= max_reports || !seen.insert(*report).second) continue;
    std::string_view text;
    if (report->file == program_name) {
      text = source;
    } else {
      auto header = std::find_if(headers.begin(), headers.end(),
                                 [&](const Header& h) { return h.name == report->file; });
      if (header == headers.end()) continue;
      text = header->content;
    }
    out += excerpt_of(*report, text);
  }
  return out;
}

}  // namespace fuseflow::detail
