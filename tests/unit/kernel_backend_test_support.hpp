// SPDX-License-Identifier: Apache-2.0
// What the kernel backend tests share: an SMBIOS processor entry for DMI's
// max speed, and a fake machine of cpufreq policies over seven CPUs with a
// directory for the state file beside it.
#pragma once

#include "fake_cpufreq.hpp"
#include "temp_tree.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cppc::backend::test
{

using cppc::test::FakeCppcCpu;
using cppc::test::FakeCpufreq;
using cppc::test::FakePolicy;
using cppc::test::TempTree;

// An SMBIOS type 4 structure: type, length, handle, ..., Max Speed at 0x14.
inline std::string dmiProcessor(std::uint8_t length, std::uint16_t mhz,
                                std::uint8_t type = 4)
{
    std::string raw(std::max<std::size_t>(length, 0x16) + 2, '\0');
    raw[0] = static_cast<char>(type);
    raw[1] = static_cast<char>(length);
    raw[0x14] = static_cast<char>(mhz & 0xFF);
    raw[0x15] = static_cast<char>(mhz >> 8);
    return raw;
}

inline const std::vector<std::string> allGovernors = {
    "conservative", "ondemand",    "userspace",
    "powersave",    "performance", "schedutil"};

// The fake machine, under <sys>; the state file goes to <tree>/run.
//
//   policy0  CPUs 0-3 (shared, one SW_ANY domain), Orion O6 big-core caps,
//            schedutil
//   policy4  CPU 4 alone, 255/200/50/10 at 1000-3000 MHz, userspace
//   policy5  CPU 5 alone, no frequencies in _CPC (DMI says 3000 MHz),
//            performance
//   policy6  CPU 6, offline: no affected CPUs
struct Machine
{
    explicit Machine(
        const std::vector<std::string>& policy0Governors = allGovernors,
        const char* policy5Driver = "cppc_cpufreq")
    {
        // Every CPU: guaranteed at nominal, counters that tell the CPUs
        // apart, the kernel's "never wraps".
        const auto addCpu = [this](unsigned cpu, FakeCppcCpu c) {
            c.guaranteed = c.nominal;
            c.referenceCount = std::uint64_t{cpu} * 1000;
            c.deliveredCount = std::uint64_t{cpu} * 2000;
            c.wraparoundTime = ~std::uint64_t{0};
            cpufreq.addCpu(cpu, c);
        };
        const FakeCppcCpu orion{.highest = 0x2000,
                                .nominal = 0x2000,
                                .lowestNonlinear = 0xA3D,
                                .lowest = 0xA3D,
                                .lowestFreqMhz = 800,
                                .nominalFreqMhz = 2500};
        for (unsigned cpu = 0; cpu < 4; ++cpu)
        {
            addCpu(cpu, orion);
        }
        addCpu(4, {.highest = 255,
                   .nominal = 200,
                   .lowestNonlinear = 50,
                   .lowest = 10,
                   .reference = 200,
                   .lowestFreqMhz = 1000,
                   .nominalFreqMhz = 3000});
        addCpu(5, {.highest = 1000,
                   .nominal = 800,
                   .lowestNonlinear = 200,
                   .lowest = 100,
                   .nominalFreqMhz = 0});
        addCpu(6, orion);
        cpufreq.addPolicy(
            {.number = 0,
             .cpus = {0, 1, 2, 3},
             .governors = policy0Governors,
             .governor = "schedutil",
             .cpuinfoMinKhz = 800000,
             .cpuinfoMaxKhz = 2500000,
             .curFreq = true,
             .cpuLinks = true});
        cpufreq.addPolicy(
            {.number = 4,
             .cpus = {4},
             .governors = allGovernors,
             .governor = "userspace",
             .setspeedKhz = 2000000,
             .cpuinfoMinKhz = 1000000,
             .cpuinfoMaxKhz = 3000000,
             .minKhz = 1421052,
             .curFreq = true});
        cpufreq.addPolicy(
            {.number = 5,
             .cpus = {5},
             .driver = policy5Driver,
             .governors = allGovernors,
             .governor = "performance",
             .cpuinfoMinKhz = 300000,
             .cpuinfoMaxKhz = 2400000,
             .minKhz = 600000,
             .curFreq = true});
        cpufreq.addPolicy(
            {.number = 6,
             .cpus = {6},
             .online = false,
             .governors = allGovernors,
             .governor = "schedutil",
             .cpuinfoMinKhz = 800000,
             .cpuinfoMaxKhz = 2500000,
             .curFreq = true});
        sys.write("sys/firmware/dmi/entries/4-0/raw", dmiProcessor(48, 3000));
        std::filesystem::create_directories(tree.path() / "run");
    }

    std::filesystem::path root() const
    {
        return sys.path();
    }
    std::filesystem::path stateFile() const
    {
        return tree.path() / "run/cpufreq.state";
    }
    std::filesystem::path policyDir(unsigned policy) const
    {
        return cpufreq.policyPath(policy);
    }
    std::string policyFile(unsigned policy, const char* name) const
    {
        return cpufreq.policyFile(policy, name);
    }
    void setPolicyFile(unsigned policy, const char* name,
                       const std::string& value) const
    {
        cpufreq.setPolicyFile(policy, name, value);
    }
    std::map<std::string, std::string> kernelView() const
    {
        return cpufreq.kernelView();
    }

    TempTree tree;
    TempTree sys;
    FakeCpufreq cpufreq{sys};
};

} // namespace cppc::backend::test
