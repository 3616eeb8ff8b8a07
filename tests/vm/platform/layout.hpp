// SPDX-License-Identifier: Apache-2.0
// What the platform plays: each CPU's performance scale and where its CPPC
// registers are, and the PCC subspaces, read from a text file the VM rig
// writes from what the guest kernel published (cpuN/acpi_cppc) and the
// layout's register addresses. One line a CPU or subspace, `#` comments:
//
//   cpu 0 highest=8192 nominal=8192 lowest_nonlinear=2621 lowest=2621
//         reference=1000 lowest_mhz=800 nominal_mhz=2500
//         desired=mem:0x90000000:32 reference_counter=mem:0x90000008:64
//         delivered_counter=mem:0x90000010:64 [minimum= maximum= epp=
//         auto_select= window= limited=] [mark=mem:0x90000800:64]
//   pcc 0 base=0x90100000 size=0x1000 doorbell=mem:0x90200000:32
//         doorbell_write=0x1
//
// A register is `mem:ADDRESS:WIDTH[:BIT]` (guest-physical SystemMemory, an
// access of WIDTH bits, 8/16/32/64, the field from bit BIT to the unit's
// end) or `pcc:SUBSPACE:OFFSET:WIDTH[:BIT]` (OFFSET bytes into the
// subspace's payload, after its 8-byte header, as Linux addresses PCC
// registers). The parser takes only that and throws LayoutError naming
// the file, the line and the word otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::platform
{

class LayoutError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

enum class Space : std::uint8_t
{
    memory,
    pcc,
};

struct Field
{
    Space space = Space::memory;
    std::uint64_t address = 0; // guest-physical, or payload offset in PCC
    unsigned subspace = 0;     // PCC only
    unsigned width = 32;       // the access: 8, 16, 32 or 64 bits
    unsigned bit = 0;          // the field's first bit; it runs to the end

    [[nodiscard]] std::uint64_t mask() const noexcept
    {
        const unsigned bits = width - bit;
        return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    }
};

// A CPU's performance scale as its _CPC gives it (the guest kernel's
// acpi_cppc files).
struct Scale
{
    std::uint32_t highest = 0;
    std::uint32_t nominal = 0;
    std::uint32_t lowestNonlinear = 0;
    std::uint32_t lowest = 0;
    std::uint32_t reference = 0; // ReferencePerformance; 0: nominal stands in
    std::uint32_t lowestMhz = 0;
    std::uint32_t nominalMhz = 0;

    [[nodiscard]] std::uint32_t effectiveReference() const noexcept
    {
        return reference != 0 ? reference : nominal;
    }
};

struct CpuLayout
{
    unsigned cpu = 0;
    Scale scale;
    Field desired;
    Field referenceCounter;
    Field deliveredCounter;
    std::optional<Field> minimum;
    std::optional<Field> maximum;
    std::optional<Field> epp;
    std::optional<Field> autoSelect;
    std::optional<Field> window;
    std::optional<Field> limited;
    std::optional<Field> mark; // in memory only
};

// Every register of `cpu` that it has, and its mark word.
[[nodiscard]] std::vector<const Field*> registers(const CpuLayout& cpu);

struct SubspaceLayout
{
    unsigned id = 0;
    std::uint64_t base = 0; // guest-physical start of the shared region
    std::uint64_t size = 0;
    Field doorbell;
    std::uint64_t doorbellWrite = 1; // the bits the OS sets to ring
};

struct Layout
{
    std::vector<CpuLayout> cpus;           // by CPU number, 0..n-1
    std::vector<SubspaceLayout> subspaces; // by id
};

// Parses a layout file's text; `name` names it in errors.
[[nodiscard]] Layout parseLayout(std::string_view text, std::string_view name);

// Reads and parses the file at `path`.
[[nodiscard]] Layout readLayout(const std::string& path);

} // namespace cppcgov::platform
