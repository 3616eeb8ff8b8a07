// SPDX-License-Identifier: Apache-2.0
// The guest's RAM as the platform sees it: QEMU's memory backend file
// (`-object memory-backend-file,...,share=on`) mapped shared, so that a
// register costs the platform a load or a store, as the guest's own
// accesses do, and neither side waits for the other. Only the windows the
// layout uses are mapped. Accesses are single atomic loads and stores of
// the register's width (relaxed: the guest's MMIO accessors order their
// own side); a field narrower than its access is merged with a
// compare-and-swap so that a guest store in between is never lost.
#pragma once

#include "tests/vm/platform/layout.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cppcgov::platform
{

class GuestMemory
{
  public:
    // Maps [address, address + size) of guest-physical memory for each
    // window given, from `path`, whose offset 0 is guest-physical
    // `ramBase`. Throws std::system_error when the file cannot be opened or
    // is too short, std::invalid_argument for a window below the RAM.
    struct Window
    {
        std::uint64_t address;
        std::uint64_t size;
    };
    GuestMemory(const std::string& path, std::uint64_t ramBase,
                const std::vector<Window>& windows);
    ~GuestMemory();
    GuestMemory(const GuestMemory&) = delete;
    GuestMemory& operator=(const GuestMemory&) = delete;

    // The bytes at guest-physical `address` (size bytes inside one window);
    // throws std::out_of_range when no window holds them.
    [[nodiscard]] std::byte* at(std::uint64_t address, std::size_t size) const;

    // A memory field's value (its bits shifted down).
    [[nodiscard]] std::uint64_t load(const Field& field) const;
    // Stores `value` into a memory field, keeping the other bits of its
    // access.
    void store(const Field& field, std::uint64_t value) const;
    // Sets `bits` (of the field) without touching the rest.
    void setBits(const Field& field, std::uint64_t bits) const;

  private:
    struct Mapping
    {
        std::uint64_t address;
        std::uint64_t size;
        std::byte* bytes;
        std::size_t length;
        std::size_t skew; // the window's start past the page boundary
    };
    std::vector<Mapping> maps_;
};

// Single-copy atomic accesses of 8 to 64 bits at `where`.
[[nodiscard]] std::uint64_t loadUnit(const std::byte* where, unsigned width);
void storeUnit(std::byte* where, unsigned width, std::uint64_t value);
// Replaces the bits of `mask` with those of `value` in one compare-and-swap
// loop; returns the unit's value after.
std::uint64_t mergeUnit(std::byte* where, unsigned width, std::uint64_t mask,
                        std::uint64_t value);

// A field in the access unit at `unit`: its value (shifted down); a store
// that keeps the unit's other bits; `bits` set without touching the rest.
[[nodiscard]] std::uint64_t loadField(const std::byte* unit,
                                      const Field& field);
void storeField(std::byte* unit, const Field& field, std::uint64_t value);
void setFieldBits(std::byte* unit, const Field& field, std::uint64_t bits);

} // namespace cppcgov::platform
