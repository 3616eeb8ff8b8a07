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
//             offsets.
#pragma once

#include "lib/cpc_descriptor.hpp"

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

struct Layout
{
    std::string name;
    std::string summary;
    std::vector<CpcDescriptor> cpus;
    std::vector<PccSubspaceSpec> pccSubspaces;
};

// The names makeLayout() accepts, in a stable order.
std::vector<std::string_view> layoutNames();

// Builds a layout by name; throws std::invalid_argument naming the known
// layouts when `name` is not one of them.
Layout makeLayout(std::string_view name);

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
