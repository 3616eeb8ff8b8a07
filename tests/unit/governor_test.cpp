#include "daemon/governor.hpp"

#include <map>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

// A machine of plain values: load set by the test, requests recorded.
class FakeMachine final : public Machine
{
  public:
    FakeMachine(std::size_t cpus, std::vector<policies::Domain> domains)
    {
        std::vector<policies::CpuCaps> caps(cpus, {1000, 800, 200, 100, 0});
        topology_ = policies::makeTopology(caps, std::move(domains));
        load.resize(cpus);
    }

    std::string name() const override
    {
        return "fake";
    }
    const policies::Topology& topology() const override
    {
        return topology_;
    }
    std::optional<std::uint32_t> psdDomain(std::uint32_t cpu) const override
    {
        return cpu / 2;
    }
    std::error_code sample(std::uint64_t,
                           std::span<CpuSample> out) noexcept override
    {
        for (std::size_t i = 0; i < out.size(); ++i)
        {
            out[i] = {load[i], 0};
        }
        return sampleError;
    }
    Controls controls() const noexcept override
    {
        return {Control::desired, Control::min, Control::max};
    }
    std::error_code apply(
        std::span<const CppcRequest> requests) noexcept override
    {
        for (const CppcRequest& r : requests)
        {
            written[r.cpu] = r.desired;
            last[r.cpu] = r;
            ++writes;
        }
        return {};
    }
    std::optional<std::uint32_t> cpuOfHostCpu(
        std::uint32_t hostCpu) const noexcept override
    {
        return hostCpu;
    }
    std::vector<std::string> restore() noexcept override
    {
        return {};
    }

    std::vector<std::uint16_t> load;
    std::map<std::uint32_t, std::uint32_t> written;
    std::map<std::uint32_t, CppcRequest> last;
    std::size_t writes = 0;
    std::error_code sampleError;

  private:
    policies::Topology topology_;
};

GovernorConfig noAveraging()
{
    GovernorConfig c;
    c.defaults.schedutil.rateLimitUpUs = 1;
    c.defaults.schedutil.rateLimitDownUs = 1;
    return c;
}

TEST(Governor, ClampMinRaisesOnlyTheCpuTheTaskIsActiveOn)
{
    FakeMachine m(4, {{{0, 1, 2, 3}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    ASSERT_EQ(report.writes, 4U);
    EXPECT_EQ(m.written[2], 200U); // idle: the floor (lowest nonlinear)

    const std::vector<ActiveClamp> active = {{7, 2, {1024, 1024}}};
    g.tick(3000, active, report);
    EXPECT_EQ(m.written[2], 800U); // util_min 1024: the ceiling (nominal)
    EXPECT_EQ(m.written[1], 200U);
    EXPECT_EQ(g.cpus()[2].reason, policies::Reason::ceiling);
    EXPECT_EQ(g.cpus()[2].clamp, (policies::Clamp{1024, 1024}));
    EXPECT_EQ(g.cpus()[2].handles, std::vector<std::uint64_t>{7});
    EXPECT_TRUE(g.cpus()[1].handles.empty());
    EXPECT_EQ(report.handlesWritten, std::vector<std::uint64_t>{7});
    EXPECT_EQ(report.handlesActive, std::vector<std::uint64_t>{7});
}

TEST(Governor, RequestsCarryTheDecisionsMinimumAndMaximum)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::shared}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    ASSERT_EQ(report.writes, 2U);
    // The CPUs' lowest and highest around the floor, EPP left alone.
    EXPECT_EQ(m.last[1], (CppcRequest{1, 100, 200, 1000, std::nullopt}));
    EXPECT_EQ(g.cpus()[1].requestedPerf, 200U);
}

TEST(Governor, ClampsOnOneCpuCombineLikeUclamp)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<ActiveClamp> active = {
        {1, 0, {100, 300}}, {2, 0, {400, 500}}, {3, 5, {1024, 1024}}};
    g.tick(1000, active, report);
    EXPECT_EQ(g.cpus()[0].clamp, (policies::Clamp{400, 500}));
    EXPECT_EQ(g.cpus()[0].handles, (std::vector<std::uint64_t>{1, 2}));
    // A CPU outside the machine is ignored.
    EXPECT_EQ(report.handlesActive, (std::vector<std::uint64_t>{1, 2}));
}

TEST(Governor, SharedDomainWritesEveryCpuOnce)
{
    FakeMachine m(4, {{{0, 1}, policies::Coordination::shared},
                      {{2, 3}, policies::Coordination::shared}});
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(report.writes, 4U);
    g.tick(2000, {}, report);
    EXPECT_EQ(report.writes, 0U) << "nothing changed, nothing written";
    m.load = {0, 1024, 0, 0};
    g.tick(40000, {}, report);
    EXPECT_EQ(m.written[0], m.written[1]);
    EXPECT_GT(m.written[0], 200U);
    EXPECT_EQ(m.written[2], 200U);
}

TEST(Governor, OverridesApplyPerDomainAndKeepState)
{
    FakeMachine m(4, {{{0, 1, 2, 3}, policies::Coordination::perCpu}});
    GovernorConfig c = noAveraging();
    Governor g(m, c);
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(m.written[3], 200U);

    Override o;
    CpuSet cpus;
    cpus.set(3);
    o.selector = cpus;
    o.kind = policies::PolicyKind::performance;
    c.overrides.push_back(o);
    g.configure(c);
    g.tick(2000, {}, report);
    EXPECT_EQ(m.written[3], 800U);
    EXPECT_EQ(g.cpus()[3].reason, policies::Reason::fixed);
    EXPECT_EQ(report.writes, 1U) << "the other CPUs kept their request";
}

TEST(Governor, AClampOutlivesItsTaskBrieflyUnlessForgotten)
{
    FakeMachine m(2, {{{0, 1}, policies::Coordination::perCpu}});
    Governor g(m, noAveraging());
    TickReport report;
    const std::vector<ActiveClamp> active = {{9, 1, {1024, 1024}}};
    g.tick(1000, active, report);
    EXPECT_EQ(m.written[1], 800U);
    // Not seen for less than the hold time: still clamped.
    g.tick(1000 + clampHoldUs, {}, report);
    EXPECT_EQ(g.cpus()[1].handles, std::vector<std::uint64_t>{9});
    EXPECT_EQ(m.written[1], 800U);
    // Past it: gone.
    g.tick(2000 + clampHoldUs, {}, report);
    EXPECT_TRUE(g.cpus()[1].handles.empty());
    EXPECT_EQ(m.written[1], 200U);

    g.tick(3000 + clampHoldUs, active, report);
    EXPECT_EQ(m.written[1], 800U);
    g.forget(9);
    g.tick(4000 + clampHoldUs, {}, report);
    EXPECT_TRUE(g.cpus()[1].handles.empty()) << "a released clamp goes at once";
}

TEST(Governor, SampleErrorsAreReportedAndTheTickGoesOn)
{
    FakeMachine m(1, {{{0}, policies::Coordination::perCpu}});
    m.sampleError = std::make_error_code(std::errc::io_error);
    Governor g(m, noAveraging());
    TickReport report;
    g.tick(1000, {}, report);
    EXPECT_EQ(report.sampleError, std::errc::io_error);
    EXPECT_EQ(report.writes, 1U);
}

} // namespace
} // namespace cppcgov::daemon
