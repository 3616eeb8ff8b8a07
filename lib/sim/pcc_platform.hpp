// SPDX-License-Identifier: Apache-2.0
// A simulated PCC platform, the firmware side of one PCC subspace, modelled
// on the Ampere Altra's CPPC subspace (type 2, id 2, a 0x4000-byte region,
// 50 us nominal latency, 60 us minimum turnaround, a doorbell and a
// platform ack register): what a pcc::Channel talks to in tests and
// benchmarks.
//
// It owns the shared-memory region (header with the right signature, status
// with command complete set) and the doorbell and platform ack registers,
// reachable through registers() as 32-bit SystemMemory registers at the
// subspace's addresses. A responder thread polls the doorbell register with
// absolute CLOCK_MONOTONIC sleeps every pollInterval (there is no way to
// trap a plain store, so it polls, with its timer slack at 1 ns). When it
// finds the doorbell's write-mask bits set it clears them, counts a
// doorbell, waits until `latency` after it saw the ring, and completes the
// command: a write latches a copy of the whole payload (every CPU's block)
// so tests can see what the platform received; a read calls the read
// handler, which may fill registers; any other code is answered with the
// error bit. It then sets command complete (and error, when asked to fail)
// in status. It also counts and clears platform ack rings.
//
// The platform keeps its own clock and sleeps rather than sharing the
// channel's, so its timestamps are an independent record of what the
// channel did. Times are nanoseconds of CLOCK_MONOTONIC.
#pragma once

#include "lib/acpi/pcct.hpp"
#include "lib/pcc_port.hpp"
#include "lib/register_io.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace cppc::sim
{

struct PccPlatformConfig
{
    std::uint8_t id = 2;
    std::uint8_t type = 2; // 0, 1 or 2; only type 2 has a platform ack
    std::uint64_t baseAddress = 0x810000000;
    std::size_t length = 0x4000; // the region, header included
    std::uint64_t doorbellAddress = 0x810F00010;
    std::uint64_t doorbellPreserveMask = 0;
    std::uint64_t doorbellWriteMask = 0x1; // must not be 0
    std::uint64_t ackAddress = 0x810F00020;
    std::uint64_t ackPreserveMask = 0xFFFFFFFE;
    std::uint64_t ackWriteMask = 0x1;
    // What the PCCT says.
    std::uint32_t nominalLatencyUs = 50;
    std::uint32_t maxPeriodicAccessRate = 0;
    std::uint32_t minRequestTurnaroundUs = 60;
    // What the platform does: time from seeing the doorbell to command
    // complete, and how often it looks at its registers.
    std::chrono::nanoseconds latency = std::chrono::microseconds{50};
    std::chrono::nanoseconds pollInterval = std::chrono::microseconds{10};
};

struct PccPlatformCounts
{
    std::uint64_t doorbells = 0;
    std::uint64_t writeCommands = 0;
    std::uint64_t readCommands = 0;
    std::uint64_t otherCommands = 0; // answered with the error bit
    std::uint64_t errorReplies = 0;
    std::uint64_t acks = 0;

    bool operator==(const PccPlatformCounts&) const = default;
};

// One doorbell, in order.
struct PccCommandRecord
{
    std::uint16_t command = 0; // the code found at completion
    bool completed = false;
    bool error = false;
    std::chrono::nanoseconds rungAt{0};      // when the platform saw it
    std::chrono::nanoseconds completedAt{0}; // just before status was set
};

class PccPlatform
{
  public:
    // Builds the region and registers and starts the responder. Throws
    // std::invalid_argument for a type above 2, a zero doorbell write mask
    // or a region shorter than 16 bytes or not a multiple of 8.
    explicit PccPlatform(PccPlatformConfig config = {});
    // Stops and joins the responder.
    ~PccPlatform();

    PccPlatform(const PccPlatform&) = delete;
    PccPlatform& operator=(const PccPlatform&) = delete;

    // The subspace as a PCCT would describe it.
    const acpi::PccSubspace& subspace() const noexcept
    {
        return subspace_;
    }
    // The shared-memory region, 8-byte aligned.
    std::span<std::byte> region() noexcept
    {
        return {reinterpret_cast<std::byte*>(memory_.get()), config_.length};
    }
    // Maps the doorbell and platform ack registers (SystemMemory, at their
    // configured addresses, up to 8 bytes); anything else throws
    // std::invalid_argument.
    RegisterMap& registers() noexcept
    {
        return registers_;
    }

    // While false, rung commands are held, never completed; setting it
    // true completes a held command (not before its latency).
    void setAnswering(bool answering) noexcept;
    // The next `count` completed commands get the error bit.
    void failNextCommands(unsigned count) noexcept;
    void setLatency(std::chrono::nanoseconds latency) noexcept;
    // Called on the responder thread for each read command, with the
    // payload, before command complete is set.
    void setReadHandler(std::function<void(std::span<std::byte>)> handler);

    // A register's value in the payload as latched by the last write
    // command (0 before any). Throws std::out_of_range outside the payload.
    std::uint64_t received(const PccRegister& reg) const;
    // A register's value in the payload now, and setting it (for read
    // commands to return); use while no command is in flight.
    std::uint64_t payloadValue(const PccRegister& reg) const;
    void setPayloadValue(const PccRegister& reg, std::uint64_t value);
    // The status word in the header.
    std::uint16_t status() const noexcept;

    // What the platform has seen so far; acks are counted when the
    // responder next looks (sync() waits for that).
    PccPlatformCounts counts() const noexcept;
    // Every doorbell seen, oldest first (the first 65536).
    std::vector<PccCommandRecord> history() const;

    // Returns after the responder has made two full passes from the call
    // on, so every doorbell and ack rung before the call is counted.
    void sync() const noexcept;
    // Waits until `n` doorbells have been seen or `timeout` passed;
    // returns whether they were.
    [[nodiscard]] bool waitForDoorbells(
        std::uint64_t n, std::chrono::nanoseconds timeout) const noexcept;

  private:
    class Registers final : public RegisterMap
    {
      public:
        explicit Registers(PccPlatform& platform) : platform_(&platform) {}
        std::byte* map(AddressSpace space, std::uint64_t address,
                       std::size_t bytes) override;

      private:
        PccPlatform* platform_;
    };

    void run() noexcept;
    bool takeDoorbell() noexcept;
    void takeAck() noexcept;
    void complete() noexcept;
    std::byte* field(const PccRegister& reg, std::size_t& bytes) const;

    PccPlatformConfig config_;
    acpi::PccSubspace subspace_;
    std::unique_ptr<std::uint64_t[]> memory_;
    alignas(8) std::uint64_t doorbell_ = 0;
    alignas(8) std::uint64_t ack_ = 0;
    Registers registers_;

    std::atomic<bool> answering_{true};
    std::atomic<unsigned> failNext_{0};
    std::atomic<std::int64_t> latencyNs_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> passes_{0};

    mutable std::mutex mutex_; // latched_, history_, readHandler_
    std::vector<std::uint8_t> latched_;
    std::vector<PccCommandRecord> history_;
    std::function<void(std::span<std::byte>)> readHandler_;

    std::atomic<std::uint64_t> doorbells_{0};
    std::atomic<std::uint64_t> writeCommands_{0};
    std::atomic<std::uint64_t> readCommands_{0};
    std::atomic<std::uint64_t> otherCommands_{0};
    std::atomic<std::uint64_t> errorReplies_{0};
    std::atomic<std::uint64_t> acks_{0};

    // Responder state.
    bool pending_ = false;
    std::chrono::nanoseconds rungAt_{0};

    std::thread responder_; // last: starts once everything above exists
};

} // namespace cppc::sim
