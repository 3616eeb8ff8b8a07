// SPDX-License-Identifier: Apache-2.0
// Register backends seen by PerfControl: a map from (space, address) to
// memory, and the accessor that loads and stores through it.
//
// PerfControl is a template over its accessor ("Io") so that the store on
// the hot path is a direct volatile store for mapped registers, while the
// simulator's counting accessor can see every access. An Io provides:
//
//   using Ref = ...;                       // what a bound register is
//   Ref bind(const RegisterDesc&, std::uint8_t unitBytes, unsigned cpu,
//            CpcEntry entry);              // at start-up; may throw
//   template <class T> void store(Ref, T) noexcept;
//   std::uint64_t load(Ref, std::uint8_t bytes) noexcept;
//   void store(Ref, std::uint8_t bytes, std::uint64_t) noexcept;
//   void lock(std::mutex&, Ref) noexcept;  // and unlock
#pragma once

#include "cpc_descriptor.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace cppc
{

// Maps register addresses to process memory: /dev/mem pages on hardware, a
// file standing in for it in tests, or the simulator's register file.
class RegisterMap
{
  public:
    virtual ~RegisterMap() = default;

    // Returns memory for `bytes` bytes at `address` in `space`, valid for
    // the map's lifetime. Throws std::system_error or std::invalid_argument
    // when the register cannot be mapped.
    virtual std::byte* map(AddressSpace space, std::uint64_t address,
                           std::size_t bytes) = 0;
};

// Plain volatile loads and stores through a RegisterMap: what runs on
// hardware and in benchmarks.
class MappedIo
{
  public:
    using Ref = std::byte*;

    explicit MappedIo(RegisterMap& map) : map_(&map) {}

    Ref bind(const RegisterDesc& reg, std::uint8_t unitBytes, unsigned,
             CpcEntry)
    {
        return map_->map(static_cast<AddressSpace>(reg.space), reg.address,
                         unitBytes);
    }

    template <class T>
    static void store(Ref ref, T value) noexcept
    {
        *reinterpret_cast<volatile T*>(ref) = value;
    }

    static std::uint64_t load(Ref ref, std::uint8_t bytes) noexcept
    {
        switch (bytes)
        {
            case 1:
                return *reinterpret_cast<volatile std::uint8_t*>(ref);
            case 2:
                return *reinterpret_cast<volatile std::uint16_t*>(ref);
            case 4:
                return *reinterpret_cast<volatile std::uint32_t*>(ref);
            default:
                return *reinterpret_cast<volatile std::uint64_t*>(ref);
        }
    }

    static void store(Ref ref, std::uint8_t bytes, std::uint64_t value) noexcept
    {
        switch (bytes)
        {
            case 1:
                store(ref, static_cast<std::uint8_t>(value));
                break;
            case 2:
                store(ref, static_cast<std::uint16_t>(value));
                break;
            case 4:
                store(ref, static_cast<std::uint32_t>(value));
                break;
            default:
                store(ref, value);
                break;
        }
    }

    static void lock(std::mutex& m, Ref) noexcept
    {
        m.lock();
    }
    static void unlock(std::mutex& m, Ref) noexcept
    {
        m.unlock();
    }

  private:
    RegisterMap* map_;
};

} // namespace cppc
