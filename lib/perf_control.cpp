// SPDX-License-Identifier: Apache-2.0
#include "perf_control.hpp"

namespace cppc
{

std::optional<std::uint64_t> readRegister(const AccessPlan& plan, unsigned cpu,
                                          CpcEntry entry, RegisterMap& map)
{
    const CpcDescriptor* d =
        cpu < plan.cpuCount() ? plan.descriptor(cpu) : nullptr;
    if (d == nullptr)
    {
        return std::nullopt;
    }
    const RegisterPlan& rp = plan.cpu(cpu).reg(entry);
    if (rp.unitBytes == 0 || rp.access == AccessClass::refused)
    {
        return std::nullopt;
    }
    const RegisterDesc& reg = d->entry(entry).reg;
    return rp.field(MappedIo::load(map.map(static_cast<AddressSpace>(reg.space),
                                           reg.address, rp.unitBytes),
                                   rp.unitBytes));
}

template class BasicPerfControl<MappedIo>;
template class BasicConservativePerfControl<MappedIo>;

} // namespace cppc
