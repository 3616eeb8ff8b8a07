// SPDX-License-Identifier: Apache-2.0
// Register layouts of the simulated machine, modelled on real firmware.
//
//   orion-o6  12 CPUs (Radxa Orion O6): Desired is a full-width 32-bit
//             SystemMemory word per SW_ANY _PSD domain, so every CPU of a
//             domain names the same address; counters are FFH.
//   rd-n2     16 CPUs, an RD-N2-like standalone layout: one 32-bit Desired
//             per CPU with PerfLimited 4 bytes after it.
//   packed    8 CPUs: Desired, Minimum and Maximum as 8-bit fields of one
//             32-bit unit per CPU.
//   altra     32 CPUs (Ampere Altra): every register in PCC subspace 2, a
//             0x80-byte block per CPU, 64-bit counters at 4-byte-aligned
//             offsets, PerformanceLimited at +0x3C (the real table has no
//             Minimum, Maximum, EPP or autonomous registers: NULL).
//   neoverse  8 CPUs, a synthetic layout with every CPPC control: a 32-bit
//             Desired per CPU; Minimum, Maximum and EPP as 8-bit fields of
//             the next 32-bit unit; AutonomousSelectionEnable (bit 0) and
//             AutonomousActivityWindow (bits 8-17) sharing the unit after
//             that; then a 32-bit PerformanceLimited. The shared units
//             need the plan's locks and read-modify-writes.
//
// rd-n2, packed and neoverse are synthetic and scale to any number of CPUs from
// 1 to maxLayoutCpus: each CPU repeats the same registers at the next address
// and keeps its own _PSD domain. orion-o6 and altra copy real firmware and
// have the number of CPUs that firmware has.
#pragma once

#include "lib/cpc_descriptor.hpp"
#include "lib/pcc_port.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cppc::sim
{

struct PccSubspaceSpec
{
    std::uint8_t id = 0;
    std::size_t payloadBytes = 0;
};

// A register value the simulated platform holds in a PCC subspace's
// payload from the start: the capabilities a layout keeps in PCC.
struct PccPreset
{
    std::uint8_t subspace = 0;
    PccRegister reg;
    std::uint64_t value = 0;
};

struct Layout
{
    std::string name;
    std::string summary;
    std::vector<CpcDescriptor> cpus;
    std::vector<PccSubspaceSpec> pccSubspaces;
    std::vector<PccPreset> pccPresets;
};

// The most CPUs a scalable layout can be given.
inline constexpr unsigned maxLayoutCpus = 4096;

// Every layout's name, in a stable order, and whether it scales. A
// compile-time table so that configuration checks need no library.
struct LayoutName
{
    std::string_view name;
    bool scalable = false;
};

inline constexpr std::array<LayoutName, 5> layoutTable = {{
    {"orion-o6", false},
    {"rd-n2", true},
    {"packed", true},
    {"altra", false},
    {"neoverse", true},
}};

// Whether `name` is a layout that makeLayout(name, cpus) builds with any
// number of CPUs; false for the fixed layouts and for unknown names.
constexpr bool layoutScales(std::string_view name) noexcept
{
    for (const LayoutName& l : layoutTable)
    {
        if (l.name == name)
        {
            return l.scalable;
        }
    }
    return false;
}

// The names makeLayout() accepts, in a stable order.
std::vector<std::string_view> layoutNames();

// Builds a layout by name with its own number of CPUs; throws
// std::invalid_argument naming the known layouts when `name` is not one of
// them.
Layout makeLayout(std::string_view name);

// Builds a layout by name with `cpus` CPUs; 0 means the layout's own
// number. The scalable layouts take 1 to maxLayoutCpus; the fixed ones only
// their own number (or 0). Throws std::invalid_argument naming the layout
// and the layouts that scale when the count is refused, and as
// makeLayout(name) for an unknown name.
Layout makeLayout(std::string_view name, unsigned cpus);

// Helpers for building descriptors in code (layouts, tests, fuzzers).
RegisterDesc memoryRegister(std::uint64_t address, std::uint8_t bitWidth,
                            std::uint8_t bitOffset = 0,
                            std::uint8_t accessSize = 3);
RegisterDesc pccRegister(std::uint8_t subspace, std::uint64_t offset,
                         std::uint8_t bitWidth = 32);
RegisterDesc ffhRegister(std::uint64_t address, std::uint8_t bitWidth = 64);
inline constexpr RegisterDesc nullRegister{};

// A revision 3 _CPC source: Integer performance levels, NULL registers
// everywhere else; callers then set the registers they need.
CpcSource cpcV3(unsigned cpu, std::uint32_t highest, std::uint32_t nominal,
                std::uint32_t lowestNonlinear, std::uint32_t lowest);
void setEntry(CpcSource& source, CpcEntry entry, const CpcValue& value);

} // namespace cppc::sim
