// SPDX-License-Identifier: Apache-2.0
// The machines and variants the write-path benchmarks share.
//
// Each machine is an access plan over one register layout, bound twice to
// plain memory: once by the optimised PerfControl and once by the
// ConservativePerfControl, both through MappedIo, the accessor that runs on
// hardware. The registers are ordinary memory here (the simulator's register
// file, which counts nothing when reached through MappedIo), not MMIO.
//
// A variant is one (path, access class) pair to measure. The timed
// benchmark (write_path) and the instruction counter (write_path_icount)
// run the same variants on the same machines, so their tables line up.
#pragma once

#include "lib/access_plan.hpp"
#include "lib/cpc_descriptor.hpp"
#include "lib/perf_control.hpp"
#include "lib/register_io.hpp"
#include "lib/sim/register_file.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppc::bench
{

// One layout's access plan, its register memory, and both perf controls
// bound to it. Neither copyable nor movable: the controls keep pointers
// into the plan and the map.
class Machine
{
  public:
    // `layout` is a simulator layout name, or "partial" (built here): four
    // CPUs whose Desired is an 8-bit field at bit 0 of its own 32-bit unit,
    // with no Minimum or Maximum register.
    explicit Machine(std::string_view layout);

    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    const AccessPlan& plan() const noexcept
    {
        return plan_;
    }
    PerfControl& optimised() noexcept
    {
        return optimised_;
    }
    ConservativePerfControl& conservative() noexcept
    {
        return conservative_;
    }

    // The memory of `cpu`'s Desired access unit, from the same map the
    // controls were bound to.
    std::byte* desiredUnit(unsigned cpu);

    // The current value of `cpu`'s Desired field, read from that memory.
    std::uint64_t desiredValue(unsigned cpu);

  private:
    AccessPlan plan_;
    sim::RegisterFile map_; // plain memory; MappedIo does not count
    PerfControl optimised_;
    ConservativePerfControl conservative_;
};

// The floor: the volatile 32-bit store every full-width request ends in,
// and nothing else. Not inlined, so a call costs what a call costs.
[[gnu::noinline]] void floorStore(std::byte* unit,
                                  std::uint32_t value) noexcept;

enum class Path : std::uint8_t
{
    floor,
    optimised,
    conservative,
};

struct Variant
{
    // Unique name, e.g. "optimised/full-width-standalone".
    std::string_view name;
    // What it is compared with: the access class (or "floor").
    std::string_view group;
    Path path = Path::floor;
    std::string_view layout;
    // The class the plan must give CPU 0's Desired on `layout`.
    AccessClass expected = AccessClass::fullWidthStandalone;
    // setPerf(cpu, desired, min, max) instead of setPerf(cpu, desired).
    bool threeValues = false;
};

// Every variant, floor first, then each group's optimised and conservative
// variants next to each other.
std::span<const Variant> variants() noexcept;

// The variant called `name`, or nullptr.
const Variant* findVariant(std::string_view name) noexcept;

// The groups in table order (without the floor).
std::span<const std::string_view> groups() noexcept;

// The CPU every variant writes, and the two Desired values it alternates
// between (both fit an 8-bit field). Minimum and maximum for the
// three-value variants.
inline constexpr unsigned benchCpu = 0;
inline constexpr std::uint64_t desiredA = 100;
inline constexpr std::uint64_t desiredB = 200;
inline constexpr std::uint64_t minValue = 40;
inline constexpr std::uint64_t maxValue = 255;

// Checks that `variant` measures what it claims on `machine`: the class of
// CPU 0's Desired is the expected one, and a request lands in the register.
// Returns an empty string when it does, else what is wrong.
std::string checkVariant(const Variant& variant, Machine& machine);

// The machines by layout name, built on first use and kept for the
// process's lifetime.
Machine& machine(std::string_view layout);

} // namespace cppc::bench
