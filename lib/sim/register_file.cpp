// SPDX-License-Identifier: Apache-2.0
#include "register_file.hpp"

#include "lib/text.hpp"

#include <cstring>
#include <stdexcept>

namespace cppc::sim
{

std::byte* RegisterFile::locate(AddressSpace space, std::uint64_t address,
                                std::size_t bytes, bool create) const
{
    if (space != AddressSpace::systemMemory && space != AddressSpace::systemIo)
    {
        throw std::invalid_argument(
            "register file: address space " +
            hex(static_cast<std::uint8_t>(space)) + " is not memory or I/O");
    }
    if (bytes == 0 || bytes > 8 || address % bytes != 0)
    {
        throw std::invalid_argument(
            "register file: " + std::to_string(bytes) + "-byte access at " +
            hex(address) + " is not a naturally aligned unit");
    }
    const Key key{static_cast<std::uint8_t>(space), address / pageSize};
    std::lock_guard guard(mutex_);
    auto it = pages_.find(key);
    if (it == pages_.end())
    {
        if (!create)
        {
            return nullptr;
        }
        it = pages_.emplace(key, std::make_unique<Page>()).first;
        it->second->fill(0);
    }
    return reinterpret_cast<std::byte*>(it->second->data()) +
           address % pageSize;
}

std::byte* RegisterFile::map(AddressSpace space, std::uint64_t address,
                             std::size_t bytes)
{
    return locate(space, address, bytes, true);
}

std::uint64_t RegisterFile::peek(AddressSpace space, std::uint64_t address,
                                 std::size_t bytes) const
{
    const std::byte* p = locate(space, address, bytes, false);
    if (p == nullptr)
    {
        return 0;
    }
    std::uint64_t value = 0;
    std::memcpy(&value, p, bytes); // little-endian, like the Arm servers
    return value;
}

void RegisterFile::poke(AddressSpace space, std::uint64_t address,
                        std::size_t bytes, std::uint64_t value)
{
    std::memcpy(locate(space, address, bytes, true), &value, bytes);
}

AccessCounters& RegisterFile::unitCounters(AddressSpace space,
                                           std::uint64_t address)
{
    std::lock_guard guard(mutex_);
    auto& slot = units_[{static_cast<std::uint8_t>(space), address}];
    if (!slot)
    {
        slot = std::make_unique<AccessCounters>();
    }
    return *slot;
}

AccessCounters& RegisterFile::registerCounters(unsigned cpu, CpcEntry entry)
{
    std::lock_guard guard(mutex_);
    auto& slot = registers_[{cpu, entry}];
    if (!slot)
    {
        slot = std::make_unique<AccessCounters>();
    }
    return *slot;
}

AccessCounts RegisterFile::unitCounts(AddressSpace space,
                                      std::uint64_t address) const
{
    std::lock_guard guard(mutex_);
    auto it = units_.find({static_cast<std::uint8_t>(space), address});
    return it == units_.end() ? AccessCounts{} : it->second->snapshot();
}

AccessCounts RegisterFile::registerCounts(unsigned cpu, CpcEntry entry) const
{
    std::lock_guard guard(mutex_);
    auto it = registers_.find({cpu, entry});
    return it == registers_.end() ? AccessCounts{} : it->second->snapshot();
}

AccessCounts RegisterFile::totalCounts() const
{
    std::lock_guard guard(mutex_);
    AccessCounts sum;
    for (const auto& [key, counters] : units_)
    {
        const AccessCounts c = counters->snapshot();
        sum.reads += c.reads;
        sum.writes += c.writes;
        sum.locks += c.locks;
    }
    return sum;
}

void RegisterFile::resetCounts()
{
    std::lock_guard guard(mutex_);
    for (auto& [key, c] : units_)
    {
        c->reset();
    }
    for (auto& [key, c] : registers_)
    {
        c->reset();
    }
}

} // namespace cppc::sim
