// CSV as the harness writes and reads it (RFC 4180: a field with a comma, a
// quote or a line break is quoted, quotes doubled).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness::detail {

std::string csv_field(std::string_view text);
std::string csv_row(const std::vector<std::string>& fields);  // with its "\n"

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // the file's line of each row, for errors
};
// Lines starting with '#' are comments; blank lines are skipped. Throws
// PlotError "path:line: ..." for an unclosed quote or a row whose field count
// differs from the header's.
CsvTable read_csv(std::string_view text, const std::string& path);

}  // namespace wanlab::harness::detail
