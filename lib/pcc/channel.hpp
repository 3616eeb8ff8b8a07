// SPDX-License-Identifier: Apache-2.0
// The PCC channel: the OS side of one PCC subspace (ACPI 6.5 section 14),
// implementing PccPort for the subspace's CPPC registers.
//
// Shared memory (types 0-2): the subspace's region starts with
//   offset 0  32-bit signature, 0x50434300 | subspace id
//   offset 4  16-bit command (CPPC: 0 read, 1 write)
//   offset 6  16-bit status: bit 0 command complete, bit 1 platform
//             interrupt, bit 2 error, bit 3 platform notification
//   offset 8  the payload, where PCC register offsets point.
//
// One command:
//   1. if the platform still owns the channel (an earlier command has not
//      been seen complete), wait for command complete; past the completion
//      timeout this is Errc::pccTimeout and nothing is sent. Like Linux,
//      the channel assumes at start-up that the platform does not own it;
//   2. with a maximum periodic access rate (commands per minute, 0 = no
//      limit), take one command from a budget of that many, renewed when it
//      runs out if 60 s have passed since it was last renewed (as Linux
//      does); a command over the limit is not sent and returns
//      Errc::pccRateLimited at once (the channel never sleeps out the
//      minute);
//   3. sleep until the subspace's minimum request turnaround has passed
//      since the previous command was seen complete;
//   4. for a write, store the carried register values into the payload;
//      write the command code, clear command complete and error in status;
//   5. ring the doorbell: read the register, AND its preserve mask, OR its
//      write mask, write it back;
//   6. poll status for command complete with precise waits (precise_wait
//      .hpp) every pollInterval() until completionTimeout() after the
//      doorbell: completionTimeout() is max(timeoutFloor, timeoutMultiplier
//      x nominal latency), 500 x nominal (as Linux) with a 10 ms floor by
//      default. Missing it is Errc::pccTimeout, and the channel stays owned
//      by the platform until a later command sees command complete;
//   7. for a type 2 subspace with a platform ack register, ring the ack
//      register the same way;
//   8. an error bit in status is cleared and returned as
//      Errc::pccPlatformError; a read command's registers are then read
//      from the payload.
// Registers are bit fields of the payload: the bytes a field touches are
// read, merged and written back, so neighbouring fields keep their bits.
//
// Batching. Every request (a write() or read() call) is a node on its
// caller's stack, queued in arrival order under the channel's one mutex.
// When no command is being prepared or in flight, the request at the head
// of the queue becomes the sender:
//   - a write sender optionally sleeps for the batching window (default 0),
//     during which more requests queue behind it, then takes every queued
//     write (with batching off: only its own) and sends ONE write command
//     carrying all their values under ONE doorbell;
//   - a read sender first sends one write command for every queued write
//     (with batching off, writes queued before it have already gone out in
//     order and no later write is taken), then the read command.
// Writers that arrive while a command is in flight queue and are carried by
// the next command, so N concurrent writers cost two doorbells when one
// command is in flight as they arrive. Each caller returns once the
// command that carried ITS values (or its read) has completed, with that
// command's result; values of a command that failed before its doorbell
// (timeout waiting for the channel, rate limit) are not stored. Only the
// sender touches the payload and the registers, so they need no lock of
// their own; the queue, the sender flag and the results are under the
// mutex. write() and read() do not allocate.
//
// Ordering: the payload, header and registers are reached with volatile
// loads and stores (like MappedIo); a release fence orders the payload and
// header stores before the doorbell, and an acquire fence orders the
// command-complete load before reading the payload.
#pragma once

#include "lib/acpi/pcct.hpp"
#include "lib/pcc/precise_wait.hpp"
#include "lib/pcc_port.hpp"
#include "lib/register_io.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <stdexcept>
#include <system_error>

namespace cppc::pcc
{

// Shared-memory header layout and bits.
inline constexpr std::uint32_t signatureBase = 0x50434300;
inline constexpr std::size_t headerBytes = 8;
inline constexpr std::size_t commandOffset = 4;
inline constexpr std::size_t statusOffset = 6;
inline constexpr std::uint16_t statusCommandComplete = 0x1;
inline constexpr std::uint16_t statusPlatformInterrupt = 0x2;
inline constexpr std::uint16_t statusError = 0x4;
inline constexpr std::uint16_t statusPlatformNotification = 0x8;

// CPPC's PCC command codes.
inline constexpr std::uint16_t commandRead = 0;
inline constexpr std::uint16_t commandWrite = 1;

// A subspace the channel cannot drive; what() names the subspace.
class ChannelError : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

struct ChannelOptions
{
    // Carry every queued write in one command (true), or send one command
    // per write() (false: the baseline batching is measured against).
    bool batching = true;
    // How long a write sender waits for more writers before sending.
    Nanos batchWindow{0};
    // The completion timeout is max(timeoutFloor, timeoutMultiplier x the
    // subspace's nominal latency).
    unsigned timeoutMultiplier = 500;
    Nanos timeoutFloor = std::chrono::milliseconds{10};
    // Time between polls of status; 0 derives it from the nominal latency
    // (an eighth of it, kept within 2 us and 50 us).
    Nanos pollInterval{0};
    // The clock and sleeper of every wait; null is monotonicClock(). Must
    // outlive the channel.
    WaitClock* clock = nullptr;
};

// What the channel has done since it was created.
struct ChannelStats
{
    std::uint64_t doorbells = 0;
    std::uint64_t writeCommands = 0;
    std::uint64_t readCommands = 0;
    std::uint64_t acks = 0;          // platform ack register rung
    std::uint64_t writeRequests = 0; // write() calls completed, any result
    std::uint64_t readRequests = 0;  // read() calls completed, any result
    std::uint64_t timeouts = 0;
    std::uint64_t platformErrors = 0;
    std::uint64_t rateLimited = 0;

    bool operator==(const ChannelStats&) const = default;
};

class Channel final : public PccPort
{
  public:
    // Drives `subspace` through its shared memory `region` (the mapped
    // region, normally addressLength bytes; in tests the simulated
    // platform's memory), ringing its doorbell and platform ack registers
    // mapped through `registers`. `region` must be 8-byte aligned and
    // outlive the channel, as must the memory `registers` returns.
    // Throws ChannelError naming the subspace for a type other than 0, 1
    // or 2, a region shorter than the header or misaligned, a signature
    // other than 0x50434300 | id, or a doorbell or ack register that is
    // not a 1, 2, 4 or 8-byte SystemMemory or SystemIO register; and what
    // registers.map() throws.
    Channel(const acpi::PccSubspace& subspace, std::span<std::byte> region,
            RegisterMap& registers, ChannelOptions options = {});

    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    // Stores each value into its payload field and returns once the write
    // command carrying them has completed, with its result: success,
    // Errc::pccTimeout, Errc::pccPlatformError or Errc::pccRateLimited.
    // Returns at once with Errc::pccUnavailable when `subspace` is not
    // this channel's, Errc::pccBadRegister for a field of width 0 or above
    // 64 bits or outside the payload, Errc::valueOutOfRange for a value
    // wider than its field, and success for no writes. Does not allocate.
    [[nodiscard]] std::error_code write(
        std::uint8_t subspace,
        std::span<const PccWrite> writes) noexcept override;

    // Sends a read command, after a write command for writes queued on the
    // channel, and then reads each register into `values`. Errors as for
    // write(); Errc::pccBadRegister also when values.size() !=
    // regs.size(). `values` is left unchanged on failure. Does not
    // allocate.
    [[nodiscard]] std::error_code read(
        std::uint8_t subspace, std::span<const PccRegister> regs,
        std::span<std::uint64_t> values) noexcept override;

    // The subspace id.
    std::uint8_t id() const noexcept
    {
        return id_;
    }
    // How long after the doorbell the channel waits for command complete.
    Nanos completionTimeout() const noexcept
    {
        return timeout_;
    }
    // The time between polls of status.
    Nanos pollInterval() const noexcept
    {
        return pollInterval_;
    }
    // The number of requests queued and not yet taken into a command.
    [[nodiscard]] std::size_t queuedRequests() const noexcept;
    // A snapshot of the counters; each is exact, the set is not taken
    // atomically.
    [[nodiscard]] ChannelStats stats() const noexcept;

  private:
    struct Request
    {
        bool isRead = false;
        std::span<const PccWrite> writes;
        std::span<const PccRegister> regs;
        std::span<std::uint64_t> values;
        std::error_code result;
        bool done = false;
        Request* next = nullptr;
    };

    struct RegisterRef
    {
        std::byte* ptr = nullptr;
        std::uint8_t bytes = 0;
        std::uint64_t preserve = 0;
        std::uint64_t set = 0;
    };

    RegisterRef bindRegister(const acpi::PccSubspace& s, const RegisterDesc& r,
                             std::uint64_t preserve, std::uint64_t set,
                             const char* what, RegisterMap& registers);
    std::error_code check(std::uint8_t subspace,
                          std::span<const PccRegister> regs) const noexcept;
    std::error_code submit(Request& request) noexcept;
    void runSender(std::unique_lock<std::mutex>& lock, Request& me) noexcept;
    Request* takeWrites(bool all) noexcept;
    static void finish(Request* list, std::error_code result) noexcept;
    std::error_code transact(std::uint16_t command,
                             const Request* writes) noexcept;
    bool commandComplete() const noexcept;
    void ring(const RegisterRef& reg) noexcept;
    std::uint16_t loadStatus() const noexcept;
    void storeStatus(std::uint16_t value) noexcept;
    void storeField(const PccRegister& reg, std::uint64_t value) noexcept;
    std::uint64_t loadField(const PccRegister& reg) const noexcept;

    std::uint8_t id_;
    bool ack_;
    bool batching_;
    Nanos batchWindow_;
    Nanos timeout_;
    Nanos pollInterval_;
    Nanos turnaround_;
    std::uint32_t maxPerMinute_;
    WaitClock* clock_;
    std::byte* base_;
    std::size_t payloadBytes_;
    RegisterRef doorbell_;
    RegisterRef platformAck_;

    // Sender state: touched only by the thread holding the sender role.
    bool platformOwns_ = false;
    bool haveCompletion_ = false;
    Nanos lastCompletion_{0};
    bool rateWindowStarted_ = false;
    Nanos rateWindowStart_{0};
    std::uint32_t rateLeft_ = 0;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    bool sending_ = false;    // guarded by mutex_
    Request* head_ = nullptr; // guarded by mutex_
    Request* tail_ = nullptr; // guarded by mutex_
    std::size_t queued_ = 0;  // guarded by mutex_

    std::atomic<std::uint64_t> doorbells_{0};
    std::atomic<std::uint64_t> writeCommands_{0};
    std::atomic<std::uint64_t> readCommands_{0};
    std::atomic<std::uint64_t> acks_{0};
    std::atomic<std::uint64_t> writeRequests_{0};
    std::atomic<std::uint64_t> readRequests_{0};
    std::atomic<std::uint64_t> timeouts_{0};
    std::atomic<std::uint64_t> platformErrors_{0};
    std::atomic<std::uint64_t> rateLimited_{0};
};

} // namespace cppc::pcc
