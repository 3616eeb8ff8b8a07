// SPDX-License-Identifier: Apache-2.0
// The simulated machine's register side: memory standing in for SystemMemory
// and SystemIO registers, with a count of every read, write and lock
// acquisition per access unit and per _CPC register, so tests can assert
// that perf control did exactly what the access plan prescribes.
#pragma once

#include "lib/cpc_descriptor.hpp"
#include "lib/register_io.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace cppc::sim
{

// A snapshot of access counts.
struct AccessCounts
{
    std::uint64_t reads = 0;
    std::uint64_t writes = 0;
    std::uint64_t locks = 0;

    bool operator==(const AccessCounts&) const = default;
};

// Live counters; updated from any thread.
struct AccessCounters
{
    std::atomic<std::uint64_t> reads{0};
    std::atomic<std::uint64_t> writes{0};
    std::atomic<std::uint64_t> locks{0};

    AccessCounts snapshot() const noexcept
    {
        return {reads.load(), writes.load(), locks.load()};
    }
    void reset() noexcept
    {
        reads = 0;
        writes = 0;
        locks = 0;
    }
};

class RegisterFile : public RegisterMap
{
  public:
    // Memory for the register, created zeroed on first use. Throws
    // std::invalid_argument for a zero-length, misaligned or page-crossing
    // request, or a space other than SystemMemory and SystemIO.
    std::byte* map(AddressSpace space, std::uint64_t address,
                   std::size_t bytes) override;

    // Test access to register contents; neither is counted.
    std::uint64_t peek(AddressSpace space, std::uint64_t address,
                       std::size_t bytes) const;
    void poke(AddressSpace space, std::uint64_t address, std::size_t bytes,
              std::uint64_t value);

    // Counts for the access unit starting at `address` (zero if untouched).
    AccessCounts unitCounts(AddressSpace space, std::uint64_t address) const;
    // Counts for one CPU's _CPC register.
    AccessCounts registerCounts(unsigned cpu, CpcEntry entry) const;
    // Sum over every unit.
    AccessCounts totalCounts() const;
    void resetCounts();

    // Counter objects for a unit and a register, created on first use.
    // Pointers stay valid for the file's lifetime.
    AccessCounters& unitCounters(AddressSpace space, std::uint64_t address);
    AccessCounters& registerCounters(unsigned cpu, CpcEntry entry);

    // Called with the unit's memory before each compare-and-exchange
    // (CountingIo::compareExchange), on the writer's thread: tests stand
    // the platform's concurrent writes in with it. Empty: none.
    void setInterference(std::function<void(std::byte*)> hook)
    {
        interference_ = std::move(hook);
    }

  private:
    friend class CountingIo;
    std::function<void(std::byte*)> interference_;

    static constexpr std::uint64_t pageSize = 4096;
    using Page = std::array<std::uint64_t, pageSize / 8>;
    using Key = std::pair<std::uint8_t, std::uint64_t>;

    std::byte* locate(AddressSpace space, std::uint64_t address,
                      std::size_t bytes, bool create) const;

    mutable std::mutex mutex_; // guards the maps, not the contents
    mutable std::map<Key, std::unique_ptr<Page>> pages_;
    std::map<Key, std::unique_ptr<AccessCounters>> units_;
    std::map<std::pair<unsigned, CpcEntry>, std::unique_ptr<AccessCounters>>
        registers_;
};

// The Io for perf control on the simulator: loads and stores like MappedIo
// and counts each one against its unit and its register.
class CountingIo
{
  public:
    struct Ref
    {
        std::byte* ptr = nullptr;
        AccessCounters* unit = nullptr;
        AccessCounters* reg = nullptr;
    };

    explicit CountingIo(RegisterFile& file) : file_(&file) {}

    Ref bind(const RegisterDesc& reg, std::uint8_t unitBytes, unsigned cpu,
             CpcEntry entry)
    {
        const auto space = static_cast<AddressSpace>(reg.space);
        return {file_->map(space, reg.address, unitBytes),
                &file_->unitCounters(space, reg.address),
                &file_->registerCounters(cpu, entry)};
    }

    template <class T>
    static void store(const Ref& ref, T value) noexcept
    {
        count(ref, &AccessCounters::writes);
        MappedIo::store(ref.ptr, value);
    }
    static std::uint64_t load(const Ref& ref, std::uint8_t bytes) noexcept
    {
        count(ref, &AccessCounters::reads);
        return MappedIo::load(ref.ptr, bytes);
    }
    static void store(const Ref& ref, std::uint8_t bytes,
                      std::uint64_t value) noexcept
    {
        count(ref, &AccessCounters::writes);
        MappedIo::store(ref.ptr, bytes, value);
    }
    // The register file is ordinary memory: an atomic compare-and-exchange
    // of the unit, counted as a read and, when it succeeds, a write. The
    // interference hook (setInterference) runs first, standing for the
    // platform changing the unit between a load and this exchange.
    bool compareExchange(const Ref& ref, std::uint8_t bytes,
                         std::uint64_t expected,
                         std::uint64_t desired) const noexcept
    {
        if (file_->interference_)
        {
            file_->interference_(ref.ptr);
        }
        count(ref, &AccessCounters::reads);
        bool done = false;
        switch (bytes)
        {
            case 1:
                done = exchange<std::uint8_t>(ref.ptr, expected, desired);
                break;
            case 2:
                done = exchange<std::uint16_t>(ref.ptr, expected, desired);
                break;
            case 4:
                done = exchange<std::uint32_t>(ref.ptr, expected, desired);
                break;
            default:
                done = exchange<std::uint64_t>(ref.ptr, expected, desired);
                break;
        }
        if (done)
        {
            count(ref, &AccessCounters::writes);
        }
        return done;
    }
    static void lock(std::mutex& m, const Ref& ref) noexcept
    {
        m.lock();
        count(ref, &AccessCounters::locks);
    }
    static void unlock(std::mutex& m, const Ref&) noexcept
    {
        m.unlock();
    }

  private:
    template <class T>
    static bool exchange(std::byte* ptr, std::uint64_t expected,
                         std::uint64_t desired) noexcept
    {
        auto want = static_cast<T>(expected);
        return __atomic_compare_exchange_n(reinterpret_cast<T*>(ptr), &want,
                                           static_cast<T>(desired), false,
                                           __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    static void count(
        const Ref& ref,
        std::atomic<std::uint64_t> AccessCounters::*which) noexcept
    {
        (ref.unit->*which).fetch_add(1, std::memory_order_relaxed);
        (ref.reg->*which).fetch_add(1, std::memory_order_relaxed);
    }

    RegisterFile* file_;
};

} // namespace cppc::sim
