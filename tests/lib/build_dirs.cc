// The configured source and build directories: the one test object that sees them (see test_util.h).
#include <string>

#include "tests/lib/test_util.h"

namespace sarena::testing {

const std::string& SourceDir() {
  static const std::string* dir = new std::string(SARENA_SOURCE_DIR);
  return *dir;
}

const std::string& BinaryDir() {
  static const std::string* dir = new std::string(SARENA_BINARY_DIR);
  return *dir;
}

}  // namespace sarena::testing
