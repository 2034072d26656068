#include "libsarena/base/cli.h"

#include <algorithm>

namespace sarena {

std::vector<std::string> NormalizeFlagDashes(int argc, char** argv) {
  std::vector<std::string> out;
  bool rest = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (i > 0 && !rest && a == "--") rest = true;
    if (i > 0 && !rest && a.size() > 2 && a[0] == '-') {
      size_t start = a.find_first_not_of('-');
      size_t end = std::min(a.find('='), a.size());
      if (start != std::string::npos && start < end) {
        std::replace(a.begin() + static_cast<long>(start), a.begin() + static_cast<long>(end),
                     '-', '_');
      }
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<char*> ArgvOf(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (std::string& s : args) v.push_back(s.data());
  v.push_back(nullptr);
  return v;
}

}  // namespace sarena
