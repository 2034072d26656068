// The shared test helpers themselves (tests/lib/test_util.h): TempDir makes a private directory,
// writes files into it and removes it with everything in it.
#include "tests/lib/test_util.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace sarena::testing {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, IsPrivateAndRemovedWithAllItHolds) {
  std::string path;
  {
    TempDir dir("sarena-tempdir-");
    path = dir.path();
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(fs::path(path).filename().string().rfind("sarena-tempdir-", 0), 0u) << path;
    struct stat st{};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_EQ(dir.Path("a/b.txt"), path + "/a/b.txt");
    EXPECT_EQ(dir.Write("a/b/c.txt", "hello"), path + "/a/b/c.txt");
    EXPECT_EQ(fs::file_size(dir.Path("a/b/c.txt")), 5u);
    dir.Write("a/b/c.txt", "x");  // replaces
    EXPECT_EQ(fs::file_size(dir.Path("a/b/c.txt")), 1u);
  }
  EXPECT_FALSE(fs::exists(path)) << path;
  TempDir other;
  EXPECT_NE(other.path(), path);
}

TEST(TempDir, AFailedWriteFailsTheTest) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  dir.Write("file", "x");
  EXPECT_NONFATAL_FAILURE(dir.Write("file/under/a/file", "y"), "cannot write");
}

}  // namespace
}  // namespace sarena::testing
