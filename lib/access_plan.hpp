// SPDX-License-Identifier: Apache-2.0
// The access plan: how every _CPC register of the machine is to be reached.
//
// Built once from all CPUs' descriptors, because whether a register may be
// written with a single store depends on every other entry that touches the
// same access unit, on any CPU. The plan is immutable; PerfControl binds it
// to a register backend and executes it.
#pragma once

#include "cpc_descriptor.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppc
{

enum class AccessClass : std::uint8_t
{
    // Not a register: the value is an Integer in the table.
    integer,
    // Not in this revision, or the NULL register: not supported.
    absent,
    // Full-width, and no other entry touches the unit: one store, no read,
    // no lock.
    fullWidthStandalone,
    // Full-width, and every other entry touching the unit names exactly the
    // same register (a _PSD domain's shared Desired word): one store, no
    // read, no lock. A store replaces the whole field and carries no state
    // of anyone else's, so concurrent writers can only race on which value
    // lands last, which a lock would not change.
    fullWidthAliased,
    // A partial field whose unit holds no other field (its exact aliases
    // aside): read-modify-write, no lock. Only this field's bits differ
    // between writers, so no writer can undo another's field.
    partialField,
    // The unit holds two or more different fields: read-modify-write under
    // that unit's lock.
    sharedUnit,
    // Access units overlap without being the same unit: read-modify-write
    // under one lock for the whole overlapping group (the conservative path).
    overlappingUnits,
    // In a PCC subspace: goes through the subspace's channel.
    pcc,
    // Functional Fixed Hardware (the Arm AMU counters): only a counter
    // provider (the kernel) can read it; never written.
    counterProvider,
    // Malformed: refused, with a diagnostic.
    refused,
};

std::string_view className(AccessClass c) noexcept;

// Whether a register of this class can be written by perf control.
constexpr bool isWritable(AccessClass c) noexcept
{
    switch (c)
    {
        case AccessClass::fullWidthStandalone:
        case AccessClass::fullWidthAliased:
        case AccessClass::partialField:
        case AccessClass::sharedUnit:
        case AccessClass::overlappingUnits:
        case AccessClass::pcc:
            return true;
        default:
            return false;
    }
}

// The mask of a field `width` bits wide: its largest value (all ones for
// 64 bits and more).
constexpr std::uint64_t fieldMask(unsigned width) noexcept
{
    return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// How one register of one CPU is reached.
struct RegisterPlan
{
    AccessClass access = AccessClass::absent;
    // For SystemMemory/SystemIO classes: the access unit in bytes (1, 2, 4
    // or 8), the field's shift and width within it.
    std::uint8_t unitBytes = 0;
    std::uint8_t shift = 0;
    std::uint8_t width = 0;
    // The lock guarding the unit, an index into AccessPlan::locks(); only
    // sharedUnit and overlappingUnits have one.
    std::optional<std::uint32_t> lock;
    // How many registers, on all CPUs, name exactly this field (1 = itself).
    std::uint32_t aliases = 0;
    // The lowest CPU whose same entry names exactly this field (the CPU
    // itself when no lower one does): a write through one of them is a
    // write through all. For registers outside SystemMemory, SystemIO and
    // PCC, the CPU itself.
    std::uint32_t aliasOf = 0;

    // This register's field in `unit`, the contents of its access unit as
    // loaded (SystemMemory and SystemIO: unitBytes wide).
    constexpr std::uint64_t field(std::uint64_t unit) const noexcept
    {
        return (unit >> shift) & fieldMask(width);
    }
};

enum class Severity : std::uint8_t
{
    warning,
    error, // the CPU is refused
};

struct Diagnostic
{
    Severity severity = Severity::error;
    unsigned cpu = 0;
    std::optional<CpcEntry> entry;
    // Full text: names the CPU (_UID and path), the entry and the reason.
    std::string message;
};

// A unit that needs a lock because two different fields share it, or a
// group of overlapping units.
struct LockedUnit
{
    std::uint8_t space = 0;
    std::uint64_t address = 0; // first byte of the group
    std::uint64_t bytes = 0;   // length of the group
    std::uint32_t fields = 0;  // distinct fields in it
};

struct CpuPlan
{
    // False when the CPU has no descriptor or its _CPC was refused.
    bool usable = false;
    // Whether any performance control (Desired, Min, Max) is in PCC:
    // answered once here so the write path never asks again.
    bool pccControl = false;
    std::optional<std::uint8_t> pccSubspace;
    std::array<RegisterPlan, cpcEntryCount> regs{};

    const RegisterPlan& reg(CpcEntry e) const noexcept
    {
        return regs[static_cast<std::size_t>(e)];
    }
};

namespace internal
{
class PlanBuilder;
} // namespace internal

class AccessPlan
{
  public:
    // Classifies every register of every CPU. Firmware faults do not throw:
    // they refuse the CPU concerned and are listed in diagnostics(). Throws
    // std::invalid_argument if two descriptors claim the same logical CPU.
    static AccessPlan build(std::vector<CpcDescriptor> cpus);

    // Number of CPU slots: one more than the highest logical CPU described.
    std::size_t cpuCount() const noexcept
    {
        return cpus_.size();
    }
    const CpuPlan& cpu(unsigned index) const noexcept
    {
        return cpus_[index];
    }
    // The descriptor of a CPU slot, or nullptr for a hole.
    const CpcDescriptor* descriptor(unsigned index) const noexcept;
    const std::vector<CpcDescriptor>& descriptors() const noexcept
    {
        return descriptors_;
    }
    const std::vector<LockedUnit>& locks() const noexcept
    {
        return locks_;
    }
    const std::vector<Diagnostic>& diagnostics() const noexcept
    {
        return diagnostics_;
    }
    // True when some present CPU was refused.
    bool anyRefused() const noexcept;

  private:
    friend class internal::PlanBuilder;
    AccessPlan() = default;

    std::vector<CpcDescriptor> descriptors_;
    std::vector<int> slotToDescriptor_;
    std::vector<CpuPlan> cpus_;
    std::vector<LockedUnit> locks_;
    std::vector<Diagnostic> diagnostics_;
};

// Which CPUs write the same registers: CPUs in one group have, for each
// entry asked about, exactly the same field (as a _PSD domain's shared
// Desired word on the Orion O6), or no writable register there. A request
// written for one CPU of a group is then written for all of them, so a
// batch of equal requests needs one write per group. Immutable once built.
class AliasGroups
{
  public:
    AliasGroups() = default;
    // Groups plan.cpuCount() CPUs by the `entries` registers' aliasOf. A
    // hole or a CPU whose registers are not writable for an entry does not
    // split a group on that entry; a hole or refused CPU is a group of its
    // own.
    AliasGroups(const AccessPlan& plan, std::span<const CpcEntry> entries);

    // The group of `cpu`, below groups(); every CPU is in exactly one.
    std::uint32_t groupOf(std::uint32_t cpu) const noexcept
    {
        return groupOf_[cpu];
    }
    // The CPUs of `group`, ascending.
    std::span<const std::uint32_t> members(std::uint32_t group) const noexcept
    {
        return {members_.data() + starts_[group],
                starts_[group + 1] - starts_[group]};
    }
    std::size_t groups() const noexcept
    {
        return starts_.empty() ? 0 : starts_.size() - 1;
    }
    std::size_t cpuCount() const noexcept
    {
        return groupOf_.size();
    }

  private:
    std::vector<std::uint32_t> groupOf_;
    std::vector<std::uint32_t> members_;
    std::vector<std::size_t> starts_; // groups() + 1 offsets into members_
};

} // namespace cppc
