// SPDX-License-Identifier: Apache-2.0
#include "pcc_subspace.hpp"

#include "lib/error.hpp"

#include <cstring>
#include <stdexcept>

namespace cppc::sim
{
namespace
{

// The bytes [offset, offset + n) that hold the register's field.
std::size_t spanBytes(const PccRegister& reg)
{
    return (std::size_t{reg.bitOffset} + reg.bitWidth + 7U) / 8U;
}

bool fits(const PccRegister& reg, std::size_t payload)
{
    const std::size_t n = spanBytes(reg);
    return n <= 8 && reg.offset <= payload && n <= payload - reg.offset;
}

std::uint64_t mask(const PccRegister& reg)
{
    return (reg.bitWidth >= 64 ? ~std::uint64_t{0}
                               : (std::uint64_t{1} << reg.bitWidth) - 1)
           << reg.bitOffset;
}

} // namespace

void PccSubspaces::add(std::uint8_t id, std::size_t payloadBytes)
{
    auto s = std::make_unique<Subspace>();
    s->payload.assign(payloadBytes, 0);
    if (!subspaces_.emplace(id, std::move(s)).second)
    {
        throw std::invalid_argument(
            "PCC subspace " + std::to_string(id) + " added twice");
    }
}

std::error_code PccSubspaces::write(std::uint8_t subspace,
                                    std::span<const PccWrite> writes) noexcept
{
    auto it = subspaces_.find(subspace);
    if (it == subspaces_.end())
    {
        return Errc::pccUnavailable;
    }
    Subspace& s = *it->second;
    std::lock_guard guard(s.lock);
    locks_.fetch_add(1, std::memory_order_relaxed);
    for (const PccWrite& w : writes)
    {
        if (!fits(w.reg, s.payload.size()))
        {
            return Errc::pccFailed;
        }
    }
    for (const PccWrite& w : writes)
    {
        std::uint64_t word = 0;
        const std::size_t n = spanBytes(w.reg);
        std::memcpy(&word, &s.payload[w.reg.offset], n);
        word = (word & ~mask(w.reg)) |
               ((w.value << w.reg.bitOffset) & mask(w.reg));
        std::memcpy(&s.payload[w.reg.offset], &word, n);
        registerWrites_.fetch_add(1, std::memory_order_relaxed);
    }
    commands_.fetch_add(1, std::memory_order_relaxed);
    doorbells_.fetch_add(1, std::memory_order_relaxed);
    return {};
}

std::error_code PccSubspaces::read(std::uint8_t subspace,
                                   std::span<const PccRegister> regs,
                                   std::span<std::uint64_t> values) noexcept
{
    auto it = subspaces_.find(subspace);
    if (it == subspaces_.end())
    {
        return Errc::pccUnavailable;
    }
    if (regs.size() != values.size())
    {
        return Errc::pccFailed;
    }
    Subspace& s = *it->second;
    std::lock_guard guard(s.lock);
    locks_.fetch_add(1, std::memory_order_relaxed);
    commands_.fetch_add(1, std::memory_order_relaxed);
    doorbells_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < regs.size(); ++i)
    {
        if (!fits(regs[i], s.payload.size()))
        {
            return Errc::pccFailed;
        }
        std::uint64_t word = 0;
        std::memcpy(&word, &s.payload[regs[i].offset], spanBytes(regs[i]));
        values[i] = (word & mask(regs[i])) >> regs[i].bitOffset;
    }
    return {};
}

std::uint64_t PccSubspaces::peek(std::uint8_t subspace,
                                 const PccRegister& reg) const
{
    const Subspace& s = *subspaces_.at(subspace);
    if (!fits(reg, s.payload.size()))
    {
        throw std::out_of_range("PCC register outside the payload");
    }
    std::uint64_t word = 0;
    std::memcpy(&word, &s.payload[reg.offset], spanBytes(reg));
    return (word & mask(reg)) >> reg.bitOffset;
}

void PccSubspaces::poke(std::uint8_t subspace, const PccRegister& reg,
                        std::uint64_t value)
{
    Subspace& s = *subspaces_.at(subspace);
    if (!fits(reg, s.payload.size()))
    {
        throw std::out_of_range("PCC register outside the payload");
    }
    std::lock_guard guard(s.lock);
    std::uint64_t word = 0;
    const std::size_t n = spanBytes(reg);
    std::memcpy(&word, &s.payload[reg.offset], n);
    word = (word & ~mask(reg)) | ((value << reg.bitOffset) & mask(reg));
    std::memcpy(&s.payload[reg.offset], &word, n);
}

PccCounts PccSubspaces::counts() const
{
    return {commands_.load(), doorbells_.load(), locks_.load(),
            registerWrites_.load()};
}

void PccSubspaces::resetCounts()
{
    commands_ = 0;
    doorbells_ = 0;
    locks_ = 0;
    registerWrites_ = 0;
}

} // namespace cppc::sim
