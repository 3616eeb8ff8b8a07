// SPDX-License-Identifier: Apache-2.0
#include "daemon/textfile_writer.hpp"
#include "temp_tree.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

using cppc::test::TempTree;

std::string readAll(const std::filesystem::path& path)
{
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Restores the umask it replaced.
class Umask
{
  public:
    explicit Umask(mode_t mask) : old_(::umask(mask)) {}
    ~Umask()
    {
        (void)::umask(old_);
    }
    Umask(const Umask&) = delete;
    Umask& operator=(const Umask&) = delete;

  private:
    mode_t old_;
};

std::size_t entries(const std::filesystem::path& dir)
{
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator(dir))
    {
        ++n;
    }
    return n;
}

TEST(ReplaceFile, ReplacesWithMode0644UnderAStrictUmask)
{
    const TempTree tree;
    const Umask mask(077);
    ASSERT_EQ(replaceFile(tree.path(), "m.prom", "a 1\n"), "");
    ASSERT_EQ(replaceFile(tree.path(), "m.prom", "a 2\n"), "");
    EXPECT_EQ(readAll(tree.path() / "m.prom"), "a 2\n");
    struct stat st
    {};
    ASSERT_EQ(::stat((tree.path() / "m.prom").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644U);
    EXPECT_EQ(entries(tree.path()), 1U); // no temporary file left
}

TEST(ReplaceFile, SaysWhatFailedInAMissingDirectory)
{
    const TempTree tree;
    const std::string problem =
        replaceFile(tree.path() / "gone", "m.prom", "a 1\n");
    EXPECT_NE(problem.find("creating a file in '" +
                           (tree.path() / "gone").string() + "'"),
              std::string::npos)
        << problem;
    EXPECT_NE(problem.find("No such file or directory"), std::string::npos)
        << problem;
}

// Waits until the writer's thread made `file` (the test's own timeout
// bounds the wait).
void waitFor(const std::filesystem::path& file)
{
    while (!std::filesystem::exists(file))
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

TEST(TextfileWriter, StopRemovesTheFileWritten)
{
    const TempTree tree;
    const std::filesystem::path file = tree.path() / textfileName;
    TextfileWriter writer;
    writer.write(tree.path(), "a 1\n");
    waitFor(file);
    EXPECT_EQ(readAll(file), "a 1\n");
    writer.stop();
    EXPECT_FALSE(std::filesystem::exists(file));
    EXPECT_EQ(entries(tree.path()), 0U);
    // After stop(), writes are dropped.
    writer.write(tree.path(), "a 2\n");
    EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(TextfileWriter, MovingToAnotherDirectoryRemovesTheOldFile)
{
    const TempTree tree;
    std::filesystem::create_directory(tree.path() / "a");
    std::filesystem::create_directory(tree.path() / "b");
    TextfileWriter writer;
    writer.write(tree.path() / "a", "a 1\n");
    waitFor(tree.path() / "a" / textfileName);
    writer.write(tree.path() / "b", "b 1\n");
    waitFor(tree.path() / "b" / textfileName);
    // Removed before the new directory's file was written.
    EXPECT_FALSE(std::filesystem::exists(tree.path() / "a" / textfileName));
    writer.stop();
    EXPECT_FALSE(std::filesystem::exists(tree.path() / "b" / textfileName));
}

} // namespace
} // namespace cppcgov::daemon
