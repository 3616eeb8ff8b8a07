// SPDX-License-Identifier: Apache-2.0
#include "layouts.hpp"

#include "lib/text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

namespace cppc::sim
{
namespace
{

// The CPU counts of the layouts as they are modelled.
constexpr unsigned orionCpuCount = 12;
constexpr unsigned rdN2CpuCount = 16;
constexpr unsigned packedCpuCount = 8;
constexpr unsigned altraCpuCount = 32;
constexpr unsigned neoverseCpuCount = 8;

std::string knownLayouts()
{
    std::string known;
    for (const LayoutName& l : layoutTable)
    {
        known += (known.empty() ? "" : ", ") + std::string(l.name);
    }
    return known;
}

std::string scalableLayouts()
{
    std::string out;
    for (const LayoutName& l : layoutTable)
    {
        if (l.scalable)
        {
            out += (out.empty() ? "" : ", ") + std::string(l.name);
        }
    }
    return out;
}

// "\_SB.CPUB": a scope prefix and the device number, in upper-case hex
// like the Orion and Altra tables, or decimal.
std::string cpuPath(std::string_view prefix, unsigned n, bool hexName)
{
    std::string digits = hexName ? hex(n).substr(2) : std::to_string(n);
    std::transform(digits.begin(), digits.end(), digits.begin(), [](char c) {
        return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    });
    return std::string(prefix) + digits;
}

// Values from the Orion O6 SSDT: per CPU the Integer performance levels,
// the nominal frequency, and the _PSD domain whose Desired word it shares.
struct OrionCpu
{
    std::uint32_t highest;
    std::uint32_t lowest;
    std::uint32_t nominalFreq;
    std::uint32_t domain;
    std::uint32_t domainSize;
};

constexpr std::array<OrionCpu, orionCpuCount> orionCpus = {{
    {0x2000, 0xA3D, 2500, 4, 2},
    {0x911, 0x407, 1801, 2, 4},
    {0x911, 0x407, 1801, 2, 4},
    {0x911, 0x407, 1801, 2, 4},
    {0x911, 0x407, 1801, 2, 4},
    {0x1D70, 0xA3D, 2300, 5, 2},
    {0x1D70, 0xA3D, 2300, 5, 2},
    {0x1C28, 0xA3D, 2200, 6, 2},
    {0x1C28, 0xA3D, 2200, 6, 2},
    {0x1EB8, 0xA3D, 2400, 3, 2},
    {0x1EB8, 0xA3D, 2400, 3, 2},
    {0x2000, 0xA3D, 2500, 4, 2},
}};

std::uint64_t orionDesiredAddress(std::uint32_t domain)
{
    switch (domain)
    {
        case 2:
            return 0x6590094;
        case 3:
            return 0x6590098;
        case 4:
            return 0x659009C;
        case 5:
            return 0x65900A0;
        default:
            return 0x65900A4;
    }
}

Layout orion()
{
    Layout l{"orion-o6",
             "Radxa Orion O6: Desired shared per SW_ANY domain, FFH counters",
             {},
             {},
             {}};
    for (unsigned cpu = 0; cpu < orionCpus.size(); ++cpu)
    {
        const OrionCpu& o = orionCpus[cpu];
        CpcSource s = cpcV3(cpu, o.highest, o.highest, o.lowest, o.lowest);
        s.uid = cpu;
        s.path = cpuPath("\\_SB.CPU", cpu, true);
        setEntry(s, CpcEntry::desiredPerf,
                 CpcValue::ofRegister(
                     memoryRegister(orionDesiredAddress(o.domain), 32)));
        setEntry(s, CpcEntry::counterWraparoundTime, CpcValue::ofInteger(0));
        setEntry(s, CpcEntry::referencePerfCounter,
                 CpcValue::ofRegister(ffhRegister(1)));
        setEntry(s, CpcEntry::deliveredPerfCounter,
                 CpcValue::ofRegister(ffhRegister(0)));
        setEntry(s, CpcEntry::autonomousSelectionEnable,
                 CpcValue::ofInteger(0));
        setEntry(s, CpcEntry::referencePerf, CpcValue::ofInteger(1000));
        setEntry(s, CpcEntry::lowestFreq, CpcValue::ofInteger(800));
        setEntry(s, CpcEntry::nominalFreq, CpcValue::ofInteger(o.nominalFreq));
        s.psd = PsdInfo{o.domain,
                        static_cast<std::uint8_t>(Coordination::swAny),
                        o.domainSize};
        l.cpus.emplace_back(std::move(s));
    }
    return l;
}

Layout rdN2(unsigned count)
{
    Layout l{"rd-n2",
             "RD-N2-like: a standalone 32-bit Desired per CPU, PerfLimited "
             "at +4",
             {},
             {},
             {}};
    constexpr std::uint64_t base = 0x2A9C0000;
    constexpr std::uint64_t stride = 0x1000;
    for (unsigned cpu = 0; cpu < count; ++cpu)
    {
        CpcSource s = cpcV3(cpu, 3300, 2600, 1000, 800);
        s.uid = cpu;
        s.path = cpuPath("\\_SB.C", cpu, false);
        const std::uint64_t block = base + cpu * stride;
        setEntry(s, CpcEntry::desiredPerf,
                 CpcValue::ofRegister(memoryRegister(block, 32)));
        setEntry(s, CpcEntry::perfLimited,
                 CpcValue::ofRegister(memoryRegister(block + 4, 32)));
        setEntry(s, CpcEntry::referencePerfCounter,
                 CpcValue::ofRegister(ffhRegister(1)));
        setEntry(s, CpcEntry::deliveredPerfCounter,
                 CpcValue::ofRegister(ffhRegister(0)));
        setEntry(s, CpcEntry::referencePerf, CpcValue::ofInteger(100));
        // Frequencies not proportional to the levels (1 GHz at lowest, 3
        // GHz at nominal), so that a wrong conversion shows.
        setEntry(s, CpcEntry::lowestFreq, CpcValue::ofInteger(1000));
        setEntry(s, CpcEntry::nominalFreq, CpcValue::ofInteger(3000));
        s.psd = PsdInfo{cpu, static_cast<std::uint8_t>(Coordination::swAny), 1};
        l.cpus.emplace_back(std::move(s));
    }
    return l;
}

Layout packed(unsigned count)
{
    Layout l{"packed",
             "Desired, Minimum and Maximum as 8-bit fields of one 32-bit unit",
             {},
             {},
             {}};
    constexpr std::uint64_t base = 0x50000000;
    for (unsigned cpu = 0; cpu < count; ++cpu)
    {
        CpcSource s = cpcV3(cpu, 255, 200, 60, 40);
        setEntry(s, CpcEntry::lowestFreq, CpcValue::ofInteger(400));
        setEntry(s, CpcEntry::nominalFreq, CpcValue::ofInteger(2000));
        s.uid = cpu;
        s.path = cpuPath("\\_SB.P", cpu, false);
        const std::uint64_t unit = base + std::uint64_t{cpu} * 0x10;
        setEntry(s, CpcEntry::desiredPerf,
                 CpcValue::ofRegister(memoryRegister(unit, 8, 0)));
        setEntry(s, CpcEntry::minPerf,
                 CpcValue::ofRegister(memoryRegister(unit, 8, 8)));
        setEntry(s, CpcEntry::maxPerf,
                 CpcValue::ofRegister(memoryRegister(unit, 8, 16)));
        setEntry(s, CpcEntry::referencePerfCounter,
                 CpcValue::ofRegister(ffhRegister(1)));
        setEntry(s, CpcEntry::deliveredPerfCounter,
                 CpcValue::ofRegister(ffhRegister(0)));
        s.psd = PsdInfo{cpu, static_cast<std::uint8_t>(Coordination::swAny), 1};
        l.cpus.emplace_back(std::move(s));
    }
    return l;
}

Layout neoverse(unsigned count)
{
    Layout l{"neoverse",
             "every CPPC control: Minimum, Maximum and EPP share a 32-bit "
             "unit, autonomous selection and its window another",
             {},
             {},
             {}};
    constexpr std::uint64_t base = 0x60000000;
    for (unsigned cpu = 0; cpu < count; ++cpu)
    {
        CpcSource s = cpcV3(cpu, 255, 200, 60, 40);
        setEntry(s, CpcEntry::lowestFreq, CpcValue::ofInteger(400));
        setEntry(s, CpcEntry::nominalFreq, CpcValue::ofInteger(2000));
        s.uid = cpu;
        s.path = cpuPath("\\_SB.N", cpu, false);
        const std::uint64_t block = base + std::uint64_t{cpu} * 0x20;
        const auto reg = [&](CpcEntry e, std::uint64_t offset,
                             std::uint8_t width, std::uint8_t shift) {
            setEntry(s, e,
                     CpcValue::ofRegister(
                         memoryRegister(block + offset, width, shift)));
        };
        reg(CpcEntry::desiredPerf, 0x0, 32, 0);
        reg(CpcEntry::minPerf, 0x4, 8, 0);
        reg(CpcEntry::maxPerf, 0x4, 8, 8);
        reg(CpcEntry::energyPerfPreference, 0x4, 8, 16);
        reg(CpcEntry::autonomousSelectionEnable, 0x8, 1, 0);
        reg(CpcEntry::autonomousActivityWindow, 0x8, 10, 8);
        reg(CpcEntry::perfLimited, 0xC, 32, 0);
        setEntry(s, CpcEntry::referencePerfCounter,
                 CpcValue::ofRegister(ffhRegister(1)));
        setEntry(s, CpcEntry::deliveredPerfCounter,
                 CpcValue::ofRegister(ffhRegister(0)));
        s.psd = PsdInfo{cpu, static_cast<std::uint8_t>(Coordination::swAny), 1};
        l.cpus.emplace_back(std::move(s));
    }
    return l;
}

Layout altra()
{
    constexpr std::uint8_t subspace = 2;
    // Subspace 2's region is 0x4000 bytes; the payload follows the 8-byte
    // header.
    Layout l{"altra",
             "Ampere Altra: every register in PCC subspace 2",
             {},
             {{subspace, 0x4000 - 8}},
             {}};
    // What the platform reports in the capability registers: illustrative
    // levels of a 3.0 GHz part (in MHz, as on Altra), not read from one.
    constexpr std::uint32_t highest = 3000;
    constexpr std::uint32_t nominal = 3000;
    constexpr std::uint32_t lowestNonlinear = 1000;
    constexpr std::uint32_t lowest = 1000;
    for (unsigned cpu = 0; cpu < altraCpuCount; ++cpu)
    {
        CpcSource s = cpcV3(cpu, 0, 0, 0, 0);
        s.uid = cpu;
        s.path = "\\_SB.SYST." + cpuPath("C", cpu, true);
        const std::uint64_t block = std::uint64_t{cpu} * 0x80;
        auto pcc = [&](CpcEntry e, std::uint64_t offset, std::uint8_t width) {
            setEntry(s, e,
                     CpcValue::ofRegister(
                         pccRegister(subspace, block + offset, width)));
        };
        pcc(CpcEntry::highestPerf, 0x00, 32);
        pcc(CpcEntry::nominalPerf, 0x04, 32);
        pcc(CpcEntry::lowestNonlinearPerf, 0x08, 32);
        pcc(CpcEntry::lowestPerf, 0x0C, 32);
        pcc(CpcEntry::guaranteedPerf, 0x10, 32);
        pcc(CpcEntry::desiredPerf, 0x14, 32);
        pcc(CpcEntry::referencePerfCounter, 0x2C, 64);
        pcc(CpcEntry::deliveredPerfCounter, 0x34, 64);
        pcc(CpcEntry::perfLimited, 0x3C, 32);
        pcc(CpcEntry::referencePerf, 0x50, 32);
        pcc(CpcEntry::lowestFreq, 0x54, 32);
        pcc(CpcEntry::nominalFreq, 0x58, 32);
        for (const auto& [offset, value] :
             {std::pair<std::uint64_t, std::uint32_t>{0x00, highest},
              {0x04, nominal},
              {0x08, lowestNonlinear},
              {0x0C, lowest},
              {0x10, nominal},
              {0x54, lowest},
              {0x58, nominal}})
        {
            l.pccPresets.push_back({subspace, {block + offset, 0, 32}, value});
        }
        s.psd = PsdInfo{cpu, static_cast<std::uint8_t>(Coordination::swAny), 2};
        l.cpus.emplace_back(std::move(s));
    }
    return l;
}

} // namespace

std::vector<std::string_view> layoutNames()
{
    std::vector<std::string_view> out;
    out.reserve(layoutTable.size());
    for (const LayoutName& l : layoutTable)
    {
        out.push_back(l.name);
    }
    return out;
}

Layout makeLayout(std::string_view name)
{
    return makeLayout(name, 0);
}

Layout makeLayout(std::string_view name, unsigned cpus)
{
    const auto fixed = [&](unsigned own) {
        if (cpus != 0 && cpus != own)
        {
            throw std::invalid_argument(
                "simulated layout '" + std::string(name) + "' copies real " +
                "firmware with " + std::to_string(own) + " CPUs and cannot " +
                "have " + std::to_string(cpus) +
                "; the layouts that scale: " + scalableLayouts());
        }
    };
    const auto scaled = [&](unsigned own) {
        if (cpus > maxLayoutCpus)
        {
            throw std::invalid_argument(
                "simulated layout '" + std::string(name) + "' cannot have " +
                std::to_string(cpus) + " CPUs: at most " +
                std::to_string(maxLayoutCpus));
        }
        return cpus == 0 ? own : cpus;
    };
    if (name == "orion-o6")
    {
        fixed(orionCpuCount);
        return orion();
    }
    if (name == "rd-n2")
    {
        return rdN2(scaled(rdN2CpuCount));
    }
    if (name == "packed")
    {
        return packed(scaled(packedCpuCount));
    }
    if (name == "altra")
    {
        fixed(altraCpuCount);
        return altra();
    }
    if (name == "neoverse")
    {
        return neoverse(scaled(neoverseCpuCount));
    }
    throw std::invalid_argument(
        "unknown simulated layout '" + std::string(name) +
        "' (known: " + knownLayouts() + ")");
}

RegisterDesc memoryRegister(std::uint64_t address, std::uint8_t bitWidth,
                            std::uint8_t bitOffset, std::uint8_t accessSize)
{
    return {static_cast<std::uint8_t>(AddressSpace::systemMemory), bitWidth,
            bitOffset, accessSize, address};
}

RegisterDesc pccRegister(std::uint8_t subspace, std::uint64_t offset,
                         std::uint8_t bitWidth)
{
    return {static_cast<std::uint8_t>(AddressSpace::pcc), bitWidth, 0, subspace,
            offset};
}

RegisterDesc ffhRegister(std::uint64_t address, std::uint8_t bitWidth)
{
    return {static_cast<std::uint8_t>(AddressSpace::functionalFixedHw),
            bitWidth, 0, 4, address};
}

CpcSource cpcV3(unsigned cpu, std::uint32_t highest, std::uint32_t nominal,
                std::uint32_t lowestNonlinear, std::uint32_t lowest)
{
    CpcSource s;
    s.cpu = cpu;
    s.uid = cpu;
    s.numEntries = 23;
    s.revision = 3;
    s.entries.assign(cpcEntryCount, CpcValue::ofRegister(nullRegister));
    setEntry(s, CpcEntry::highestPerf, CpcValue::ofInteger(highest));
    setEntry(s, CpcEntry::nominalPerf, CpcValue::ofInteger(nominal));
    setEntry(s, CpcEntry::lowestNonlinearPerf,
             CpcValue::ofInteger(lowestNonlinear));
    setEntry(s, CpcEntry::lowestPerf, CpcValue::ofInteger(lowest));
    setEntry(s, CpcEntry::referencePerf, CpcValue::ofInteger(0));
    setEntry(s, CpcEntry::lowestFreq, CpcValue::ofInteger(0));
    setEntry(s, CpcEntry::nominalFreq, CpcValue::ofInteger(0));
    return s;
}

void setEntry(CpcSource& source, CpcEntry entry, const CpcValue& value)
{
    source.entries.at(static_cast<std::size_t>(entry)) = value;
}

} // namespace cppc::sim
