#include "cli/table.h"

#include <algorithm>

#include "absl/strings/numbers.h"

namespace leeway {
namespace {

bool Numeric(const std::string& cell) {
  double ignored;
  return !cell.empty() && absl::SimpleAtod(cell, &ignored);
}

}  // namespace

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < std::min(row.size(), width.size()); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string rule = "+";
  for (size_t w : width) rule += std::string(w + 2, '-') + "+";
  rule += "\n";
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out = "|";
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      out += " " + (!header && Numeric(cell) ? pad + cell : cell + pad) + " |";
    }
    return out + "\n";
  };
  std::string out = rule + line(header_, true) + rule;
  for (const auto& row : rows_) out += line(row, false);
  return out + rule;
}

}  // namespace leeway
