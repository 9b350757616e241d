// Plain-text tables for the `leeway` CLI, bordered like `etcdctl -w table`:
//   +------+-------+
//   | ROLE | RANK  |
//   +------+-------+
//   | ...  | ...   |
//   +------+-------+
// Columns are as wide as their widest cell; numbers are right-aligned.
#ifndef LEEWAY_CLI_TABLE_H_
#define LEEWAY_CLI_TABLE_H_

#include <string>
#include <vector>

namespace leeway {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace leeway

#endif  // LEEWAY_CLI_TABLE_H_
