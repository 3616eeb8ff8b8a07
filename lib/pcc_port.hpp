// SPDX-License-Identifier: Apache-2.0
// The seam between perf control and a PCC subspace's channel.
//
// Registers in PCC are offsets into a subspace's shared-memory payload; the
// platform only sees them after a command and a doorbell. A PccPort takes a
// CPU's register writes for one subspace and completes them with a write
// command (which may carry other CPUs' writes of the same window too), and
// reads registers after a read command.
#pragma once

#include <cstdint>
#include <span>
#include <system_error>

namespace cppc
{

struct PccRegister
{
    std::uint64_t offset = 0; // into the subspace's payload
    std::uint8_t bitOffset = 0;
    std::uint8_t bitWidth = 0;
};

struct PccWrite
{
    PccRegister reg;
    std::uint64_t value = 0;
};

class PccPort
{
  public:
    virtual ~PccPort() = default;

    // Stores each value into its register field of `subspace` and completes
    // the writes with one write command. Must not allocate; returns an
    // error from cppc::Errc (or the channel's own category) on failure.
    virtual std::error_code write(
        std::uint8_t subspace, std::span<const PccWrite> writes) noexcept = 0;

    // Sends a read command on `subspace` (after completing any write still
    // pending there) and, once the platform has completed it, reads each
    // register into `values` (values.size() == regs.size()). Must not
    // allocate.
    virtual std::error_code read(std::uint8_t subspace,
                                 std::span<const PccRegister> regs,
                                 std::span<std::uint64_t> values) noexcept = 0;
};

} // namespace cppc
