// SPDX-License-Identifier: Apache-2.0
// Times the perf-control write path against the cost of a bare store.
//
// One run measures, side by side, the floor (a non-inlined function doing
// only the volatile 32-bit store) and setPerf() of PerfControl and
// ConservativePerfControl for each access class, all through MappedIo on
// memory. After the benchmarks it prints, from this run's own
// results, each variant's time per call relative to the floor and the
// conservative path's time relative to the optimised one per class.
#include "machines.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace
{

using cppc::bench::benchCpu;
using cppc::bench::desiredA;
using cppc::bench::desiredB;
using cppc::bench::maxValue;
using cppc::bench::minValue;

// XOR with this alternates the request between desiredA and desiredB.
constexpr std::uint64_t flip = desiredA ^ desiredB;

// The project's target for the full-width standalone path, in time.
constexpr double standaloneTarget = 1.5;

void benchFloor(benchmark::State& state, std::byte* unit)
{
    std::uint64_t desired = desiredA;
    for ([[maybe_unused]] auto _ : state)
    {
        desired ^= flip;
        cppc::bench::floorStore(unit, static_cast<std::uint32_t>(desired));
    }
}

template <class Control>
void benchDesired(benchmark::State& state, Control& control)
{
    std::uint64_t desired = desiredA;
    std::error_code ec;
    for ([[maybe_unused]] auto _ : state)
    {
        desired ^= flip;
        ec = control.setPerf(benchCpu, desired);
        benchmark::DoNotOptimize(ec);
    }
    if (ec)
    {
        state.SkipWithError(ec.message().c_str());
    }
}

template <class Control>
void benchThreeValues(benchmark::State& state, Control& control)
{
    std::uint64_t desired = desiredA;
    std::error_code ec;
    for ([[maybe_unused]] auto _ : state)
    {
        desired ^= flip;
        ec = control.setPerf(benchCpu, desired, minValue, maxValue);
        benchmark::DoNotOptimize(ec);
    }
    if (ec)
    {
        state.SkipWithError(ec.message().c_str());
    }
}

void registerVariant(const cppc::bench::Variant& v,
                     cppc::bench::Machine& machine)
{
    const std::string name(v.name);
    benchmark::internal::Benchmark* b = nullptr;
    switch (v.path)
    {
        case cppc::bench::Path::floor:
            b = benchmark::RegisterBenchmark(name.c_str(), benchFloor,
                                             machine.desiredUnit(benchCpu));
            break;
        case cppc::bench::Path::optimised:
            b = v.threeValues
                    ? benchmark::RegisterBenchmark(
                          name.c_str(), benchThreeValues<cppc::PerfControl>,
                          std::ref(machine.optimised()))
                    : benchmark::RegisterBenchmark(
                          name.c_str(), benchDesired<cppc::PerfControl>,
                          std::ref(machine.optimised()));
            break;
        case cppc::bench::Path::conservative:
            b = v.threeValues
                    ? benchmark::RegisterBenchmark(
                          name.c_str(),
                          benchThreeValues<cppc::ConservativePerfControl>,
                          std::ref(machine.conservative()))
                    : benchmark::RegisterBenchmark(
                          name.c_str(),
                          benchDesired<cppc::ConservativePerfControl>,
                          std::ref(machine.conservative()));
            break;
    }
    b->Unit(benchmark::kNanosecond);
}

// The console reporter, also keeping each benchmark's real time per
// iteration: the median aggregate when repetitions produce one, otherwise
// the median of the individual runs.
class CollectingReporter : public benchmark::ConsoleReporter
{
  public:
    using ConsoleReporter::ConsoleReporter;

    void ReportRuns(const std::vector<Run>& reports) override
    {
        ConsoleReporter::ReportRuns(reports);
        for (const Run& r : reports)
        {
            if (r.error_occurred)
            {
                continue;
            }
            Times& t = times_[r.run_name.function_name];
            const double ns =
                toNanoseconds(r.GetAdjustedRealTime(), r.time_unit);
            if (r.run_type == Run::RT_Aggregate)
            {
                if (r.aggregate_name == "median")
                {
                    t.median = ns;
                }
            }
            else
            {
                t.runs.push_back(ns);
            }
        }
    }

    // Nanoseconds per call of benchmark `name`, if it ran.
    std::optional<double> nanoseconds(std::string_view name) const
    {
        auto it = times_.find(name);
        if (it == times_.end())
        {
            return std::nullopt;
        }
        const Times& t = it->second;
        if (t.median)
        {
            return t.median;
        }
        if (t.runs.empty())
        {
            return std::nullopt;
        }
        std::vector<double> runs = t.runs;
        std::sort(runs.begin(), runs.end());
        const std::size_t mid = runs.size() / 2;
        return runs.size() % 2 != 0 ? runs[mid]
                                    : (runs[mid - 1] + runs[mid]) / 2;
    }

  private:
    struct Times
    {
        std::optional<double> median;
        std::vector<double> runs;
    };

    static double toNanoseconds(double value, benchmark::TimeUnit unit)
    {
        switch (unit)
        {
            case benchmark::kSecond:
                return value * 1e9;
            case benchmark::kMillisecond:
                return value * 1e6;
            case benchmark::kMicrosecond:
                return value * 1e3;
            case benchmark::kNanosecond:
                break;
        }
        return value;
    }

    std::map<std::string, Times, std::less<>> times_;
};

std::string fixed(std::optional<double> v, int precision = 2)
{
    if (!v)
    {
        return "-";
    }
    std::ostringstream s;
    s << std::fixed << std::setprecision(precision) << *v;
    return s.str();
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b)
{
    if (!a || !b || *b <= 0)
    {
        return std::nullopt;
    }
    return *a / *b;
}

void printRatios(const CollectingReporter& results, std::ostream& out)
{
    const std::optional<double> floorNs = results.nanoseconds("floor");
    out << "\nRatios from this run (median real time per call)\n\n";
    out << std::left << std::setw(22) << "variant" << std::right
        << std::setw(10) << "ns/call" << std::setw(10) << "x floor" << '\n';
    for (const cppc::bench::Variant& v : cppc::bench::variants())
    {
        const std::optional<double> ns = results.nanoseconds(v.name);
        out << std::left << std::setw(22) << v.name << std::right
            << std::setw(10) << fixed(ns) << std::setw(10)
            << fixed(ratio(ns, floorNs)) << '\n';
    }
    out << '\n'
        << std::left << std::setw(22) << "class" << std::right << std::setw(10)
        << "opt ns" << std::setw(10) << "cons ns" << std::setw(11) << "cons/opt"
        << '\n';
    for (std::string_view group : cppc::bench::groups())
    {
        const std::string g(group);
        const std::optional<double> opt = results.nanoseconds("opt/" + g);
        const std::optional<double> cons = results.nanoseconds("cons/" + g);
        out << std::left << std::setw(22) << g << std::right << std::setw(10)
            << fixed(opt) << std::setw(10) << fixed(cons) << std::setw(11)
            << fixed(ratio(cons, opt)) << '\n';
    }
    const std::optional<double> standalone =
        ratio(results.nanoseconds("opt/standalone"), floorNs);
    if (standalone)
    {
        out << "\nTarget: opt/standalone within " << fixed(standaloneTarget, 1)
            << "x of the floor: "
            << (*standalone <= standaloneTarget ? "holds" : "does not hold")
            << " (" << fixed(standalone) << "x)\n";
    }
}

} // namespace

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
    {
        return 1;
    }
    try
    {
        for (const cppc::bench::Variant& v : cppc::bench::variants())
        {
            cppc::bench::Machine& m = cppc::bench::machine(v.layout);
            if (const std::string why = cppc::bench::checkVariant(v, m);
                !why.empty())
            {
                std::cerr << "write_path: " << why << '\n';
                return 1;
            }
            registerVariant(v, m);
        }
    }
    catch (const std::exception& e)
    {
        std::cerr << "write_path: " << e.what() << '\n';
        return 1;
    }
    CollectingReporter reporter(isatty(STDOUT_FILENO) != 0
                                    ? benchmark::ConsoleReporter::OO_Color
                                    : benchmark::ConsoleReporter::OO_None);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    std::cout.flush();
    printRatios(reporter, std::cout);
    return 0;
}
