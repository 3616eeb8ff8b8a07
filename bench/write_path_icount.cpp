// SPDX-License-Identifier: Apache-2.0
// Runs one write-path variant a given number of times, for instruction
// counting under callgrind (see icount.sh).
//
//   write_path_icount VARIANT CALLS   make CALLS requests of VARIANT
//   write_path_icount --list          print "variant group function" lines
//
// The function is the callgrind --toggle-collect pattern naming the entry
// point a variant's requests go through (the floor store, or setPerf() of
// the optimised or conservative control), so only the instructions executed
// inside it, callees included, are counted. The calls made by the start-up
// check are the same for every CALLS; icount.sh cancels them by counting
// two runs and taking the difference.
#include "machines.hpp"

#include <benchmark/benchmark.h>

#include <charconv>
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>

namespace
{

using cppc::bench::benchCpu;
using cppc::bench::desiredA;
using cppc::bench::desiredB;
using cppc::bench::maxValue;
using cppc::bench::minValue;

constexpr std::uint64_t flip = desiredA ^ desiredB;

std::string_view entryPattern(cppc::bench::Path path)
{
    switch (path)
    {
        case cppc::bench::Path::floor:
            return "cppc::bench::floorStore*";
        case cppc::bench::Path::optimised:
            return "cppc::BasicPerfControl<cppc::MappedIo>::setPerf*";
        case cppc::bench::Path::conservative:
            return "cppc::BasicConservativePerfControl<cppc::MappedIo>::"
                   "setPerf*";
    }
    return {};
}

void runFloor(std::byte* unit, std::uint64_t calls)
{
    std::uint64_t desired = desiredA;
    for (std::uint64_t i = 0; i < calls; ++i)
    {
        desired ^= flip;
        cppc::bench::floorStore(unit, static_cast<std::uint32_t>(desired));
    }
}

template <class Control>
std::error_code runDesired(Control& control, std::uint64_t calls)
{
    std::uint64_t desired = desiredA;
    std::error_code ec;
    for (std::uint64_t i = 0; i < calls; ++i)
    {
        desired ^= flip;
        ec = control.setPerf(benchCpu, desired);
        benchmark::DoNotOptimize(ec);
    }
    return ec;
}

template <class Control>
std::error_code runThreeValues(Control& control, std::uint64_t calls)
{
    std::uint64_t desired = desiredA;
    std::error_code ec;
    for (std::uint64_t i = 0; i < calls; ++i)
    {
        desired ^= flip;
        ec = control.setPerf(benchCpu, desired, minValue, maxValue);
        benchmark::DoNotOptimize(ec);
    }
    return ec;
}

std::error_code run(const cppc::bench::Variant& v, cppc::bench::Machine& m,
                    std::uint64_t calls)
{
    switch (v.path)
    {
        case cppc::bench::Path::floor:
            runFloor(m.desiredUnit(benchCpu), calls);
            return {};
        case cppc::bench::Path::optimised:
            return v.threeValues ? runThreeValues(m.optimised(), calls)
                                 : runDesired(m.optimised(), calls);
        case cppc::bench::Path::conservative:
            return v.threeValues ? runThreeValues(m.conservative(), calls)
                                 : runDesired(m.conservative(), calls);
    }
    return {};
}

int usage()
{
    std::cerr << "usage: write_path_icount VARIANT CALLS\n"
                 "       write_path_icount --list\n"
                 "variants:";
    for (const cppc::bench::Variant& v : cppc::bench::variants())
    {
        std::cerr << ' ' << v.name;
    }
    std::cerr << '\n';
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 2 && std::string_view(argv[1]) == "--list")
    {
        for (const cppc::bench::Variant& v : cppc::bench::variants())
        {
            std::cout << v.name << ' ' << v.group << ' ' << entryPattern(v.path)
                      << '\n';
        }
        return 0;
    }
    if (argc != 3)
    {
        return usage();
    }
    const cppc::bench::Variant* v = cppc::bench::findVariant(argv[1]);
    const std::string_view count(argv[2]);
    std::uint64_t calls = 0;
    const auto [end, err] =
        std::from_chars(count.data(), count.data() + count.size(), calls);
    if (v == nullptr || err != std::errc{} ||
        end != count.data() + count.size())
    {
        return usage();
    }
    try
    {
        cppc::bench::Machine& m = cppc::bench::machine(v->layout);
        if (const std::string why = cppc::bench::checkVariant(*v, m);
            !why.empty())
        {
            std::cerr << "write_path_icount: " << why << '\n';
            return 1;
        }
        if (const std::error_code ec = run(*v, m, calls))
        {
            std::cerr << "write_path_icount: " << v->name << ": "
                      << ec.message() << '\n';
            return 1;
        }
    }
    catch (const std::exception& e)
    {
        std::cerr << "write_path_icount: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
