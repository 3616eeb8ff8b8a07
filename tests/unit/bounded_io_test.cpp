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
        tree.write("a/x", "1\n");
        tree.write("a/y", "2\n");
        tree.write("b/z", "3\n");
    }
    ~BoundedIoTest() override
    {
        // Let every access thread leave before the gate goes.
        gate.release(tree.path() / "a/x");
        (void)gate.waitFor(
            [](const GateIo& g) { return g.blockedLocked() == 0; }, 10s);
    }

    TempTree tree;
    GateIo gate;
};

TEST_F(BoundedIoTest, PassesThroughWhatReturnsInTime)
{
    const BoundedIo io(gate, 10s, 10s);
    std::string text;
    ASSERT_FALSE(io.read(tree.path() / "a/x", text));
    EXPECT_EQ(text, "1");
    ASSERT_FALSE(io.write(tree.path() / "b/z", "4\n"));
    EXPECT_EQ(tree.read("b/z"), "4\n");
    EXPECT_TRUE(io.hung().empty());
}

TEST_F(BoundedIoTest, AHungAccessTimesOutAndItsDirectoryIsLeftAlone)
{
    gate.hold(tree.path() / "a/x");
    const BoundedIo io(gate, 50ms, 10s);
    EXPECT_EQ(io.write(tree.path() / "a/x", "9\n"), Errc::accessTimedOut);
    EXPECT_EQ(io.hung().count((tree.path() / "a").lexically_normal()), 1U);
    const std::size_t before = gate.accesses().size();
    // Its sibling is not even tried; another directory is.
    EXPECT_EQ(io.write(tree.path() / "a/y", "9\n"), Errc::accessPending);
    EXPECT_THAT(gate.accesses(), SizeIs(before));
    EXPECT_FALSE(io.write(tree.path() / "b/z", "5\n"));
    EXPECT_EQ(tree.read("b/z"), "5\n");
    EXPECT_EQ(tree.read("a/y"), "2\n");
}

TEST_F(BoundedIoTest, DirectoriesGivenAsHungAreNotTouched)
{
    const BoundedIo io(gate, 10s, 10s, {tree.path() / "a/"});
    std::string text;
    EXPECT_EQ(io.read(tree.path() / "a/y", text), Errc::accessPending);
    EXPECT_EQ(io.write(tree.path() / "a/y", "9\n"), Errc::accessPending);
    EXPECT_EQ(tree.read("a/y"), "2\n");
}

TEST_F(BoundedIoTest, ASpentBudgetEndsEveryAccessAtOnce)
{
    gate.hold(tree.path() / "a/x");
    const BoundedIo io(gate, 10s, 50ms);
    EXPECT_EQ(io.write(tree.path() / "a/x", "9\n"), Errc::accessTimedOut);
    EXPECT_EQ(io.write(tree.path() / "b/z", "6\n"), Errc::accessTimedOut);
    EXPECT_EQ(tree.read("b/z"), "3\n");
}

} // namespace
} // namespace cppc::backend
