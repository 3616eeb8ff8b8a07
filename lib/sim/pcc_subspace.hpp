// SPDX-License-Identifier: Apache-2.0
// The simulated machine's PCC side, as far as perf control sees it: each
// subspace's shared-memory payload behind one lock, where a write command
// stores the registers and rings the doorbell once. It counts commands,
// doorbells, lock acquisitions and register stores, so tests can assert
// that CPUs outside PCC never touch it.
#pragma once

#include "lib/pcc_port.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace cppc::sim
{

struct PccCounts
{
    std::uint64_t commands = 0;
    std::uint64_t doorbells = 0;
    std::uint64_t locks = 0;
    std::uint64_t registerWrites = 0;

    bool operator==(const PccCounts&) const = default;
};

class PccSubspaces : public PccPort
{
  public:
    // Adds subspace `id` with a payload of `payloadBytes` (its shared
    // memory region minus the 8-byte header).
    void add(std::uint8_t id, std::size_t payloadBytes);

    std::error_code write(std::uint8_t subspace,
                          std::span<const PccWrite> writes) noexcept override;
    std::error_code read(std::uint8_t subspace,
                         std::span<const PccRegister> regs,
                         std::span<std::uint64_t> values) noexcept override;

    // A register's value in the payload (not counted).
    std::uint64_t peek(std::uint8_t subspace, const PccRegister& reg) const;
    // Sets a register's field in the payload as the platform does, without
    // a command (not counted). Throws std::out_of_range for an unknown
    // subspace or a register outside the payload.
    void poke(std::uint8_t subspace, const PccRegister& reg,
              std::uint64_t value);

    PccCounts counts() const;
    void resetCounts();

  private:
    struct Subspace
    {
        std::mutex lock;
        std::vector<std::uint8_t> payload;
    };

    std::map<std::uint8_t, std::unique_ptr<Subspace>> subspaces_;
    std::atomic<std::uint64_t> commands_{0};
    std::atomic<std::uint64_t> doorbells_{0};
    std::atomic<std::uint64_t> locks_{0};
    std::atomic<std::uint64_t> registerWrites_{0};
};

} // namespace cppc::sim
