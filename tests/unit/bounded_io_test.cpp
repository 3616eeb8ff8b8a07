// SPDX-License-Identifier: Apache-2.0
// BoundedIo: an access that does not return within its deadline answers
// accessTimedOut and marks its directory, whose later accesses answer
// accessPending at once; other directories go on; a spent budget ends
// every access at once; and what returns in time is passed through.
#include "gate_io.hpp"
#include "lib/backend/bounded_io.hpp"
#include "lib/error.hpp"
#include "temp_tree.hpp"

#include <chrono>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cppc::backend
{
namespace
{

using namespace std::chrono_literals;
using test::GateIo;
using test::TempTree;
using ::testing::SizeIs;

class BoundedIoTest : public ::testing::Test
{
  protected:
    BoundedIoTest()
    {
        tree_.write("a/x", "1\n");
        tree_.write("a/y", "2\n");
        tree_.write("b/z", "3\n");
    }
    ~BoundedIoTest() override
    {
        // Let every access thread leave before the gate_ goes.
        gate_.release(tree_.path() / "a/x");
        (void)gate_.waitFor(
            [](const GateIo& g) { return g.blockedLocked() == 0; }, 10s);
    }

    TempTree tree_;
    GateIo gate_;
};

TEST_F(BoundedIoTest, PassesThroughWhatReturnsInTime)
{
    const BoundedIo io(gate_, 10s, 10s);
    std::string text;
    ASSERT_FALSE(io.read(tree_.path() / "a/x", text));
    EXPECT_EQ(text, "1");
    ASSERT_FALSE(io.write(tree_.path() / "b/z", "4\n"));
    EXPECT_EQ(tree_.read("b/z"), "4\n");
    EXPECT_TRUE(io.hung().empty());
}

TEST_F(BoundedIoTest, AHungAccessTimesOutAndItsDirectoryIsLeftAlone)
{
    gate_.hold(tree_.path() / "a/x");
    const BoundedIo io(gate_, 300ms, 10s);
    EXPECT_EQ(io.write(tree_.path() / "a/x", "9\n"), Errc::accessTimedOut);
    EXPECT_EQ(io.hung().count((tree_.path() / "a").lexically_normal()), 1U);
    const std::size_t before = gate_.accesses().size();
    // Its sibling is not even tried; another directory is.
    EXPECT_EQ(io.write(tree_.path() / "a/y", "9\n"), Errc::accessPending);
    EXPECT_THAT(gate_.accesses(), SizeIs(before));
    EXPECT_FALSE(io.write(tree_.path() / "b/z", "5\n"));
    EXPECT_EQ(tree_.read("b/z"), "5\n");
    EXPECT_EQ(tree_.read("a/y"), "2\n");
}

TEST_F(BoundedIoTest, DirectoriesGivenAsHungAreNotTouched)
{
    const BoundedIo io(gate_, 10s, 10s, {tree_.path() / "a/"});
    std::string text;
    EXPECT_EQ(io.read(tree_.path() / "a/y", text), Errc::accessPending);
    EXPECT_EQ(io.write(tree_.path() / "a/y", "9\n"), Errc::accessPending);
    EXPECT_EQ(tree_.read("a/y"), "2\n");
}

TEST_F(BoundedIoTest, ASpentBudgetEndsEveryAccessAtOnce)
{
    gate_.hold(tree_.path() / "a/x");
    const BoundedIo io(gate_, 10s, 50ms);
    EXPECT_EQ(io.write(tree_.path() / "a/x", "9\n"), Errc::accessTimedOut);
    EXPECT_EQ(io.write(tree_.path() / "b/z", "6\n"), Errc::accessTimedOut);
    EXPECT_EQ(tree_.read("b/z"), "3\n");
}

} // namespace
} // namespace cppc::backend
