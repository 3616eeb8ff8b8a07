// SPDX-License-Identifier: Apache-2.0
// The write-path benchmarks' machines, variants and floor store.
#include "machines.hpp"

#include "lib/sim/layouts.hpp"

#include <stdexcept>

namespace cppc::bench
{
namespace
{

// Four CPUs, each with an 8-bit Desired at bit 0 of its own 32-bit unit:
// the partial-field class (read-modify-write, no lock).
std::vector<CpcDescriptor> partialLayout()
{
    constexpr std::uint64_t base = 0x60000000;
    std::vector<CpcDescriptor> cpus;
    for (unsigned cpu = 0; cpu < 4; ++cpu)
    {
        CpcSource s = sim::cpcV3(cpu, 255, 200, 60, 40);
        s.path = "\\_SB.F" + std::to_string(cpu);
        sim::setEntry(s, CpcEntry::desiredPerf,
                      CpcValue::ofRegister(sim::memoryRegister(
                          base + std::uint64_t{cpu} * 0x10, 8, 0, 3)));
        sim::setEntry(s, CpcEntry::referencePerfCounter,
                      CpcValue::ofRegister(sim::ffhRegister(1)));
        sim::setEntry(s, CpcEntry::deliveredPerfCounter,
                      CpcValue::ofRegister(sim::ffhRegister(0)));
        cpus.emplace_back(std::move(s));
    }
    return cpus;
}

std::vector<CpcDescriptor> layoutCpus(std::string_view layout)
{
    if (layout == "partial")
    {
        return partialLayout();
    }
    return sim::makeLayout(layout).cpus;
}

constexpr std::array<std::string_view, 5> groupNames = {
    "standalone", "aliased", "partial", "shared-locked", "shared-3-value",
};

constexpr std::array<Variant, 11> variantTable = {{
    {"floor", "floor", Path::floor, "rd-n2", AccessClass::fullWidthStandalone,
     false},
    {"opt/standalone", "standalone", Path::optimised, "rd-n2",
     AccessClass::fullWidthStandalone, false},
    {"cons/standalone", "standalone", Path::conservative, "rd-n2",
     AccessClass::fullWidthStandalone, false},
    {"opt/aliased", "aliased", Path::optimised, "orion-o6",
     AccessClass::fullWidthAliased, false},
    {"cons/aliased", "aliased", Path::conservative, "orion-o6",
     AccessClass::fullWidthAliased, false},
    {"opt/partial", "partial", Path::optimised, "partial",
     AccessClass::partialField, false},
    {"cons/partial", "partial", Path::conservative, "partial",
     AccessClass::partialField, false},
    {"opt/shared-locked", "shared-locked", Path::optimised, "packed",
     AccessClass::sharedUnit, false},
    {"cons/shared-locked", "shared-locked", Path::conservative, "packed",
     AccessClass::sharedUnit, false},
    {"opt/shared-3-value", "shared-3-value", Path::optimised, "packed",
     AccessClass::sharedUnit, true},
    {"cons/shared-3-value", "shared-3-value", Path::conservative, "packed",
     AccessClass::sharedUnit, true},
}};

std::error_code request(const Variant& v, Machine& m, std::uint64_t desired)
{
    switch (v.path)
    {
        case Path::floor:
            floorStore(m.desiredUnit(benchCpu),
                       static_cast<std::uint32_t>(desired));
            return {};
        case Path::optimised:
            return v.threeValues ? m.optimised().setPerf(benchCpu, desired,
                                                         minValue, maxValue)
                                 : m.optimised().setPerf(benchCpu, desired);
        case Path::conservative:
            return v.threeValues ? m.conservative().setPerf(benchCpu, desired,
                                                            minValue, maxValue)
                                 : m.conservative().setPerf(benchCpu, desired);
    }
    return {};
}

} // namespace

Machine::Machine(std::string_view layout) :
    plan_(AccessPlan::build(layoutCpus(layout))),
    optimised_(plan_, MappedIo(map_)), conservative_(plan_, MappedIo(map_))
{}

std::byte* Machine::desiredUnit(unsigned cpu)
{
    const CpcDescriptor* d = plan_.descriptor(cpu);
    if (d == nullptr)
    {
        throw std::invalid_argument("no CPU " + std::to_string(cpu));
    }
    const RegisterDesc& reg = d->entry(CpcEntry::desiredPerf).reg;
    return map_.map(static_cast<AddressSpace>(reg.space), reg.address,
                    plan_.cpu(cpu).reg(CpcEntry::desiredPerf).unitBytes);
}

std::uint64_t Machine::desiredValue(unsigned cpu)
{
    const RegisterPlan& rp = plan_.cpu(cpu).reg(CpcEntry::desiredPerf);
    const std::uint64_t unit = MappedIo::load(desiredUnit(cpu), rp.unitBytes);
    return rp.field(unit);
}

void floorStore(std::byte* unit, std::uint32_t value) noexcept
{
    MappedIo::store<std::uint32_t>(unit, value);
}

std::span<const Variant> variants() noexcept
{
    return variantTable;
}

const Variant* findVariant(std::string_view name) noexcept
{
    for (const Variant& v : variantTable)
    {
        if (v.name == name)
        {
            return &v;
        }
    }
    return nullptr;
}

std::span<const std::string_view> groups() noexcept
{
    return groupNames;
}

std::string checkVariant(const Variant& variant, Machine& m)
{
    const std::string prefix = std::string(variant.name) + ": ";
    const CpuPlan& cpu = m.plan().cpu(benchCpu);
    if (!cpu.usable)
    {
        return prefix + "CPU " + std::to_string(benchCpu) + " of layout " +
               std::string(variant.layout) + " is refused";
    }
    const AccessClass actual = cpu.reg(CpcEntry::desiredPerf).access;
    if (actual != variant.expected)
    {
        return prefix + "Desired is " + std::string(className(actual)) +
               ", expected " + std::string(className(variant.expected));
    }
    if (variant.threeValues && !m.optimised().hasMinMax(benchCpu))
    {
        return prefix + "no writable Minimum and Maximum";
    }
    for (std::uint64_t value : {desiredA, desiredB})
    {
        if (std::error_code ec = request(variant, m, value))
        {
            return prefix + "request failed: " + ec.message();
        }
        if (m.desiredValue(benchCpu) != value)
        {
            return prefix + "request did not reach the register";
        }
    }
    return {};
}

Machine& machine(std::string_view layout)
{
    static std::map<std::string, std::unique_ptr<Machine>, std::less<>>
        machines;
    auto it = machines.find(layout);
    if (it == machines.end())
    {
        it =
            machines
                .emplace(std::string(layout), std::make_unique<Machine>(layout))
                .first;
    }
    return *it->second;
}

} // namespace cppc::bench
