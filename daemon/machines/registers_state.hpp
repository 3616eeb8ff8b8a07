// SPDX-License-Identifier: Apache-2.0
// The registers backend's state file: what every control register the
// backend may write held at start, through which a later start (or the
// unit's ExecStopPost) puts back what a run that crashed left in the _CPC
// registers.
//
// The format is line-based: a header "cppcgov-registers-state 2", then one
// line per register, "cpu<N> <entry> <address> <bit offset> <bit width>
// <value>", e.g.
//   cpu3 DesiredPerformance 0x100000a8 0 32 42
// with the entry as the ACPI specification names it, the register's
// address and field as the firmware described them (the address in
// hexadecimal), and the field's value (decimal). A restore writes a
// register only where the firmware still describes that same field.
#pragma once

#include "lib/cpc_descriptor.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::daemon
{

// One control register's value at start.
struct SavedRegister
{
    std::uint32_t cpu = 0;
    cppc::CpcEntry entry = cppc::CpcEntry::desiredPerf;
    std::uint64_t address = 0;
    std::uint8_t bitOffset = 0;
    std::uint8_t bitWidth = 0;
    std::uint64_t value = 0;

    // Whether `value` fits in bitWidth bits.
    bool fits() const noexcept;

    bool operator==(const SavedRegister&) const = default;
};

// The control registers the backend saves and puts back, in the order it
// writes them back: Desired first, as the kernel's governor would see it.
inline constexpr std::array<cppc::CpcEntry, 6> savedEntries{
    cppc::CpcEntry::desiredPerf,
    cppc::CpcEntry::minPerf,
    cppc::CpcEntry::maxPerf,
    cppc::CpcEntry::energyPerfPreference,
    cppc::CpcEntry::autonomousSelectionEnable,
    cppc::CpcEntry::autonomousActivityWindow,
};

// Where the registers backend records them: <stateDir>/registers.state.
std::filesystem::path registersStateFile(const std::filesystem::path& stateDir);

// The record name of a CPU's registers in a RestoreResult ("cpu3"): every
// register of a CPU stays in the state file while any of them is not back.
std::string registersRecord(std::uint32_t cpu);

// The state file's text for `saved`, and back. Parsing is strict: it
// accepts only what formatting writes (numbers without leading zeros, the
// address in lower case), a known entry of savedEntries, a CPU below
// cppc::maxCpus, a field within 64 bits, a value that fits it and no
// register twice; otherwise it throws std::system_error
// (cppc::Errc::malformedAttribute) naming `file` and the line.
std::string formatRegistersState(const std::vector<SavedRegister>& saved);
std::vector<SavedRegister> parseRegistersState(
    std::string_view text, const std::filesystem::path& file);

// The registers state file, for the restores of lib/backend/state_file.hpp.
struct RegistersCodec
{
    using Records = std::vector<SavedRegister>;
    static Records parse(std::string_view text,
                         const std::filesystem::path& file)
    {
        return parseRegistersState(text, file);
    }
    static std::string format(const Records& records)
    {
        return formatRegistersState(records);
    }
    static std::string name(const SavedRegister& record)
    {
        return registersRecord(record.cpu);
    }
};

} // namespace cppcgov::daemon
