// SPDX-License-Identifier: Apache-2.0
#include "bench/eval_scenarios.hpp"

#include "bench/eval_machine.hpp"
#include "bench/kernel_schedutil.hpp"
#include "daemon/config.hpp"
#include "daemon/governor.hpp"

#include <memory>
#include <numeric>
#include <optional>

namespace cppc::bench
{
namespace
{

namespace pol = cppcgov::policies;
namespace dmn = cppcgov::daemon;

constexpr std::uint64_t daemonTickUs = 1000;
// The ticks' phases: neither ticks at the instants tasks are released
// (every scenario releases its periodic jobs on whole milliseconds), as a
// periodic task on a real system does not start on a tick.
constexpr std::uint64_t daemonTickPhaseUs = 500;
constexpr std::uint64_t kernelTickPhaseUs = 1700;

sim::TaskSpec task(sim::TaskSpec::Kind kind, std::string name,
                   std::uint64_t workUs, std::uint64_t periodUs)
{
    sim::TaskSpec t;
    t.kind = kind;
    t.name = std::move(name);
    t.workUs = workUs;
    t.periodUs = periodUs;
    t.cpu = 0;
    return t;
}

// CPU 0's busy time so far: every task is pinned there.
std::uint64_t busyNs(const sim::Workload& w)
{
    std::uint64_t sum = 0;
    for (std::size_t t = 0; t < w.tasks().size(); ++t)
    {
        sum += w.taskRunNs(t);
    }
    return sum;
}

// How a row moves the workload on and what it requested last.
class Driver
{
  public:
    virtual ~Driver() = default;
    virtual void advanceTo(std::uint64_t timeUs) = 0;
    virtual std::uint32_t requested() const = 0;
};

class DaemonDriver : public Driver
{
  public:
    DaemonDriver(sim::Workload& w, const TaskHints& hints, PolicyRow row) :
        workload_(w), machine_(w, {platformCaps()}), exactInput_(w, hints),
        procfsInput_(w, hints), exact_(row != PolicyRow::cppcgovProcfs)
    {
        dmn::GovernorConfig config;
        config.defaults.kind =
            row == PolicyRow::performance ? pol::PolicyKind::performance
            : row == PolicyRow::powersave ? pol::PolicyKind::powersave
                                          : pol::PolicyKind::schedutil;
        governor_ = std::make_unique<dmn::Governor>(machine_, config);
    }

    void advanceTo(std::uint64_t timeUs) override
    {
        while (nextTickUs_ <= timeUs)
        {
            workload_.advanceTo(nextTickUs_);
            if (exact_)
            {
                exactInput_.take(workload_, samples_, exactCpus_);
                machine_.setSamples(samples_);
                governor_->tickExact(nextTickUs_, exactCpus_, report_);
            }
            else
            {
                procfsInput_.take(workload_, nextTickUs_, samples_, sightings_);
                machine_.setSamples(samples_);
                governor_->tick(nextTickUs_, sightings_, report_);
            }
            nextTickUs_ += daemonTickUs;
        }
        workload_.advanceTo(timeUs);
    }

    std::uint32_t requested() const override
    {
        return machine_.requested(0);
    }

  private:
    sim::Workload& workload_;
    EvalMachine machine_;
    ExactInput exactInput_;
    ProcfsInput procfsInput_;
    bool exact_;
    std::unique_ptr<dmn::Governor> governor_;
    std::vector<dmn::CpuSample> samples_;
    std::vector<dmn::ExactCpu> exactCpus_;
    std::vector<dmn::HintSighting> sightings_;
    dmn::TickReport report_;
    std::uint64_t nextTickUs_ = daemonTickPhaseUs;
};

class KernelDriver : public Driver
{
  public:
    KernelDriver(sim::Workload& w, const TaskHints& hints) :
        model_(w, {platformCaps()}, hints, config())
    {}

    void advanceTo(std::uint64_t timeUs) override
    {
        model_.advanceTo(timeUs);
    }

    std::uint32_t requested() const override
    {
        return model_.requested(0);
    }

  private:
    static KernelSchedutilConfig config()
    {
        KernelSchedutilConfig c;
        c.tickPhaseUs = kernelTickPhaseUs;
        return c;
    }

    KernelSchedutil model_;
};

} // namespace

std::string rowName(PolicyRow row)
{
    switch (row)
    {
        case PolicyRow::cppcgovBpf:
            return "cppcgov, BPF input";
        case PolicyRow::cppcgovProcfs:
            return "cppcgov, procfs input";
        case PolicyRow::kernelSchedutil:
            return "kernel schedutil (model)";
        case PolicyRow::performance:
            return "performance";
        case PolicyRow::powersave:
            return "powersave";
    }
    return "unknown";
}

sim::WorkloadCpu platformCpu()
{
    return {3000, 2800, 800, 100, 50};
}

pol::CpuCaps platformCaps()
{
    return {3000, 2800, 1000, 800, 50};
}

std::vector<Scenario> scenarios()
{
    using Kind = sim::TaskSpec::Kind;
    std::vector<Scenario> out;

    Scenario rtApp;
    rtApp.name = "rt_app";
    rtApp.title = "rt-app: 1 task, 500 us (at nominal) every 2 ms, util_min "
                  "512, 5000 periods";
    rtApp.tasks = {task(Kind::periodic, "rt-app", 500, 2000)};
    rtApp.hints = {pol::Clamp{512, pol::utilScale}};
    rtApp.durationUs = std::uint64_t{5000} * 2000;
    rtApp.plotFromUs = 1'000'000;
    out.push_back(rtApp);

    Scenario bursty;
    bursty.name = "bursty";
    bursty.title = "interactive: bursts of 3 ms (mean, at nominal) arriving "
                   "30 ms apart (mean), util_min 768, 20 s; deadline 30 ms";
    sim::TaskSpec burst = task(Kind::bursty, "interactive", 3000, 30'000);
    burst.seed = 7;
    bursty.tasks = {burst};
    bursty.hints = {pol::Clamp{768, pol::utilScale}};
    bursty.durationUs = 20'000'000;
    bursty.plotFromUs = 1'000'000;
    out.push_back(bursty);

    Scenario shared;
    shared.name = "shared";
    shared.title = "shared CPU: a hinted spinner under util_max 256 and an "
                   "unhinted task, 1500 us (at nominal) every 4 ms, 10 s";
    shared.tasks = {task(Kind::busy, "spinner", 0, 0),
                    task(Kind::periodic, "unhinted", 1500, 4000)};
    shared.hints = {pol::Clamp{0, 256}, std::nullopt};
    shared.durationUs = 10'000'000;
    shared.plotFromUs = 1'000'000;
    out.push_back(shared);
    return out;
}

RowResult run(const Scenario& scenario, PolicyRow row)
{
    sim::Workload w({platformCpu()}, scenario.tasks);
    std::unique_ptr<Driver> driver;
    if (row == PolicyRow::kernelSchedutil)
    {
        driver = std::make_unique<KernelDriver>(w, scenario.hints);
    }
    else
    {
        driver = std::make_unique<DaemonDriver>(w, scenario.hints, row);
    }
    RowResult r;
    r.row = row;
    double perfTime = 0;
    std::uint64_t lastBusy = 0;
    std::uint64_t warmUpMisses = 0;
    for (std::uint64_t t = plotStepUs; t <= scenario.durationUs;
         t += plotStepUs)
    {
        driver->advanceTo(t);
        perfTime += w.perf(0);
        const std::uint64_t busy = busyNs(w);
        if (t > scenario.plotFromUs &&
            t <= scenario.plotFromUs + scenario.plotUs)
        {
            r.requested.push_back(driver->requested());
            r.busy.push_back(static_cast<double>(busy - lastBusy) /
                             static_cast<double>(plotStepUs * 1000));
        }
        lastBusy = busy;
        if (t == warmUpUs)
        {
            // A job overdue now missed its deadline in the warm-up.
            warmUpMisses = w.score().misses;
        }
    }
    r.score = w.score();
    r.missesAfterWarmUp = r.score.misses - warmUpMisses;
    const std::uint64_t samples = scenario.durationUs / plotStepUs;
    r.meanPerf = perfTime / static_cast<double>(samples);
    return r;
}

} // namespace cppc::bench
