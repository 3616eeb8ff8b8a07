// SPDX-License-Identifier: Apache-2.0
// The immutable description of one CPU's ACPI _CPC and _PSD objects.
//
// A CpcDescriptor is built once, from firmware tables or from the simulated
// machine, and never changes afterwards. Construction checks what does not
// depend on other CPUs (the NumEntries/Revision pair, the entry count); the
// machine-wide register checks belong to AccessPlan.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cppc
{

// ACPI Generic Address Structure address space ids used by _CPC.
enum class AddressSpace : std::uint8_t
{
    systemMemory = 0x00,
    systemIo = 0x01,
    pcc = 0x0A,
    functionalFixedHw = 0x7F,
};

// A _CPC register: the fields of an ACPI Generic Address Structure as the
// Register() resource descriptor carries them. `space` is kept as the raw
// byte so that unknown spaces survive to be diagnosed.
struct RegisterDesc
{
    std::uint8_t space = 0;
    std::uint8_t bitWidth = 0;
    std::uint8_t bitOffset = 0;
    // ACPI access size: 0 undefined, 1 byte, 2 word, 3 dword, 4 qword. For
    // PCC registers it is the PCC subspace id instead.
    std::uint8_t accessSize = 0;
    std::uint64_t address = 0;

    // Linux's IS_NULL_REG: a SystemMemory register with every field zero
    // stands for "not supported".
    bool isNull() const noexcept
    {
        return space == 0 && bitWidth == 0 && bitOffset == 0 &&
               accessSize == 0 && address == 0;
    }

    bool inSpace(AddressSpace s) const noexcept
    {
        return space == static_cast<std::uint8_t>(s);
    }

    bool operator==(const RegisterDesc&) const = default;
};

// The _CPC entries after NumEntries and Revision, in package order.
enum class CpcEntry : std::uint8_t
{
    highestPerf,
    nominalPerf,
    lowestNonlinearPerf,
    lowestPerf,
    guaranteedPerf,
    desiredPerf,
    minPerf,
    maxPerf,
    perfReductionTolerance,
    timeWindow,
    counterWraparoundTime,
    referencePerfCounter,
    deliveredPerfCounter,
    perfLimited,
    cppcEnable,
    autonomousSelectionEnable,
    autonomousActivityWindow,
    energyPerfPreference,
    referencePerf,
    lowestFreq,
    nominalFreq,
};

inline constexpr std::size_t cpcEntryCount = 21;

// The ACPI specification's name of an entry, e.g. "DesiredPerformance".
std::string_view entryName(CpcEntry entry) noexcept;

// One _CPC entry: absent (not in this revision), an Integer or a register.
struct CpcValue
{
    enum class Kind : std::uint8_t
    {
        absent,
        integer,
        reg,
    };

    Kind kind = Kind::absent;
    std::uint64_t integer = 0;
    RegisterDesc reg{};

    static CpcValue ofInteger(std::uint64_t v)
    {
        return {Kind::integer, v, {}};
    }
    static CpcValue ofRegister(const RegisterDesc& r)
    {
        return {Kind::reg, 0, r};
    }

    bool isRegister() const noexcept
    {
        return kind == Kind::reg;
    }
    // A register that is present and not the NULL register.
    bool isLiveRegister() const noexcept
    {
        return kind == Kind::reg && !reg.isNull();
    }
};

// _PSD coordination types.
enum class Coordination : std::uint8_t
{
    swAll = 0xFC,
    swAny = 0xFD,
    hwAll = 0xFE,
};

struct PsdInfo
{
    std::uint32_t domain = 0;
    std::uint8_t coordination = static_cast<std::uint8_t>(Coordination::swAny);
    std::uint32_t numProcessors = 1;
    // The firmware's _PSD for this domain is inconsistent (its CPUs
    // disagree on NumProcessors or coordination): like Linux, treat this
    // CPU as a domain of its own.
    bool independent = false;
};

// Thrown when a descriptor cannot be built; the message names the CPU.
class DescriptorError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

// What firmware (or the simulator) says about one CPU, before checks.
struct CpcSource
{
    unsigned cpu = 0;      // logical CPU index
    std::uint64_t uid = 0; // the processor device's _UID
    std::string path;      // ACPI namespace path, e.g. "\\_SB.CPU0"
    std::uint64_t numEntries = 0;
    std::uint64_t revision = 0;
    // The package elements after NumEntries and Revision.
    std::vector<CpcValue> entries;
    std::optional<PsdInfo> psd;
};

// "CPU 3 (_UID 0x103, \\_SB.CPU3)": how messages name a CPU; the path is
// left out when empty.
std::string cpuLabel(unsigned cpu, std::uint64_t uid, std::string_view path);

class CpcDescriptor
{
  public:
    // Checks the NumEntries/Revision pair the way Linux's
    // acpi_cppc_processor_probe does (21 entries for revision 2, 23 for
    // revision 3; a revision above 3 needs more than 23 entries and is read
    // as revision 3) and takes the entries. Throws DescriptorError.
    explicit CpcDescriptor(CpcSource source);

    unsigned cpu() const noexcept
    {
        return cpu_;
    }
    std::uint64_t uid() const noexcept
    {
        return uid_;
    }
    const std::string& path() const noexcept
    {
        return path_;
    }
    // The revision as read (3 for anything newer).
    unsigned revision() const noexcept
    {
        return revision_;
    }
    const CpcValue& entry(CpcEntry e) const noexcept
    {
        return entries_[static_cast<std::size_t>(e)];
    }
    const std::optional<PsdInfo>& psd() const noexcept
    {
        return psd_;
    }
    // The PCC subspace the first PCC register names, if any register is in
    // PCC. (AccessPlan refuses CPUs whose PCC registers disagree.)
    std::optional<std::uint8_t> pccSubspace() const noexcept;

    // "CPU 3 (_UID 0x103, \_SB.CPU3)": how messages name this CPU.
    std::string label() const;

  private:
    unsigned cpu_;
    std::uint64_t uid_;
    std::string path_;
    unsigned revision_;
    std::array<CpcValue, cpcEntryCount> entries_{};
    std::optional<PsdInfo> psd_;
};

} // namespace cppc
