// SPDX-License-Identifier: Apache-2.0
#include "pcc_platform.hpp"

#include "lib/monotonic_clock.hpp"
#include "lib/text.hpp"

#include <sys/prctl.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace cppc::sim
{
namespace
{

using Nanos = std::chrono::nanoseconds;

// ACPI 6.5 section 14.2: the generic shared-memory header.
constexpr std::uint32_t signatureBase = 0x50434300;
constexpr std::size_t commandOffset = 4;
constexpr std::size_t statusOffset = 6;
constexpr std::size_t headerBytes = 8;
constexpr std::uint16_t commandComplete = 0x1;
constexpr std::uint16_t errorBit = 0x4;
constexpr std::uint16_t cppcRead = 0;
constexpr std::uint16_t cppcWrite = 1;

constexpr std::size_t historyLimit = 65536;
constexpr Nanos longestSleep = std::chrono::milliseconds{1};

Nanos now() noexcept
{
    return monotonicNow();
}

std::uint64_t fieldMask(const PccRegister& reg) noexcept
{
    return (reg.bitWidth >= 64 ? ~std::uint64_t{0}
                               : (std::uint64_t{1} << reg.bitWidth) - 1)
           << reg.bitOffset;
}

std::uint32_t load32(const std::uint64_t& word) noexcept
{
    return *reinterpret_cast<const volatile std::uint32_t*>(&word);
}

void store32(std::uint64_t& word, std::uint32_t value) noexcept
{
    *reinterpret_cast<volatile std::uint32_t*>(&word) = value;
}

RegisterDesc memoryDword(std::uint64_t address)
{
    return {static_cast<std::uint8_t>(AddressSpace::systemMemory), 32, 0, 3,
            address};
}

} // namespace

std::byte* PccPlatform::Registers::map(AddressSpace space,
                                       std::uint64_t address, std::size_t bytes)
{
    const PccPlatformConfig& c = platform_->config_;
    if (space == AddressSpace::systemMemory && bytes >= 1 && bytes <= 8)
    {
        if (address == c.doorbellAddress)
        {
            return reinterpret_cast<std::byte*>(&platform_->doorbell_);
        }
        if (c.type == 2 && address == c.ackAddress)
        {
            return reinterpret_cast<std::byte*>(&platform_->ack_);
        }
    }
    throw std::invalid_argument(
        "simulated PCC platform: no " + std::to_string(bytes) +
        "-byte register at " + hex(address) + " in space " +
        hex(static_cast<std::uint8_t>(space)));
}

PccPlatform::PccPlatform(PccPlatformConfig config) :
    config_(config), registers_(*this), latencyNs_(config.latency.count())
{
    if (config_.type > 2 || config_.doorbellWriteMask == 0 ||
        config_.length < 16 || config_.length % 8 != 0)
    {
        throw std::invalid_argument(
            "simulated PCC platform: type " + std::to_string(config_.type) +
            ", doorbell write mask " + hex(config_.doorbellWriteMask) +
            ", length " + std::to_string(config_.length) +
            ": needs a type of 0 to 2, a non-zero write mask and a length "
            "of at least 16 that is a multiple of 8");
    }
    subspace_.id = config_.id;
    subspace_.type = config_.type;
    subspace_.length = acpi::pccSubspaceLengths[config_.type];
    subspace_.baseAddress = config_.baseAddress;
    subspace_.addressLength = config_.length;
    subspace_.doorbell = memoryDword(config_.doorbellAddress);
    subspace_.doorbellPreserveMask = config_.doorbellPreserveMask;
    subspace_.doorbellWriteMask = config_.doorbellWriteMask;
    subspace_.nominalLatencyUs = config_.nominalLatencyUs;
    subspace_.maxPeriodicAccessRate = config_.maxPeriodicAccessRate;
    subspace_.minRequestTurnaroundUs = config_.minRequestTurnaroundUs;
    if (config_.type == 2)
    {
        subspace_.platformAck = memoryDword(config_.ackAddress);
        subspace_.platformAckPreserveMask = config_.ackPreserveMask;
        subspace_.platformAckWriteMask = config_.ackWriteMask;
    }

    memory_ = std::make_unique<std::uint64_t[]>(config_.length / 8);
    std::byte* base = region().data();
    const std::uint32_t signature = signatureBase | config_.id;
    std::memcpy(base, &signature, 4);
    const std::uint16_t status = commandComplete;
    std::memcpy(base + statusOffset, &status, 2);
    latched_.assign(config_.length - headerBytes, 0);
    history_.reserve(historyLimit);

    responder_ = std::thread([this] { run(); });
}

PccPlatform::~PccPlatform()
{
    stop_.store(true, std::memory_order_release);
    responder_.join();
}

void PccPlatform::setAnswering(bool answering) noexcept
{
    answering_.store(answering);
}

void PccPlatform::failNextCommands(unsigned count) noexcept
{
    failNext_.store(count);
}

void PccPlatform::setLatency(std::chrono::nanoseconds latency) noexcept
{
    latencyNs_.store(latency.count());
}

void PccPlatform::setReadHandler(
    std::function<void(std::span<std::byte>)> handler)
{
    std::lock_guard guard(mutex_);
    readHandler_ = std::move(handler);
}

std::byte* PccPlatform::field(const PccRegister& reg, std::size_t& bytes) const
{
    bytes = (std::size_t{reg.bitOffset} + reg.bitWidth + 7U) / 8U;
    const std::size_t payload = config_.length - headerBytes;
    if (reg.bitWidth == 0 || bytes > 8 || reg.offset > payload ||
        bytes > payload - reg.offset)
    {
        throw std::out_of_range("simulated PCC platform: register at " +
                                hex(reg.offset) + " outside the payload");
    }
    return reinterpret_cast<std::byte*>(memory_.get()) + headerBytes +
           reg.offset;
}

std::uint64_t PccPlatform::received(const PccRegister& reg) const
{
    std::size_t bytes = 0;
    field(reg, bytes);
    std::uint64_t word = 0;
    std::lock_guard guard(mutex_);
    std::memcpy(&word, &latched_[reg.offset], bytes);
    return (word & fieldMask(reg)) >> reg.bitOffset;
}

std::uint64_t PccPlatform::payloadValue(const PccRegister& reg) const
{
    std::size_t bytes = 0;
    const std::byte* p = field(reg, bytes);
    std::uint64_t word = 0;
    std::memcpy(&word, p, bytes);
    return (word & fieldMask(reg)) >> reg.bitOffset;
}

void PccPlatform::setPayloadValue(const PccRegister& reg, std::uint64_t value)
{
    std::size_t bytes = 0;
    std::byte* p = field(reg, bytes);
    std::uint64_t word = 0;
    std::memcpy(&word, p, bytes);
    word = (word & ~fieldMask(reg)) |
           ((value << reg.bitOffset) & fieldMask(reg));
    std::memcpy(p, &word, bytes);
}

std::uint16_t PccPlatform::status() const noexcept
{
    return *reinterpret_cast<const volatile std::uint16_t*>(
        reinterpret_cast<const std::byte*>(memory_.get()) + statusOffset);
}

PccPlatformCounts PccPlatform::counts() const noexcept
{
    return {doorbells_.load(),     writeCommands_.load(), readCommands_.load(),
            otherCommands_.load(), errorReplies_.load(),  acks_.load()};
}

std::vector<PccCommandRecord> PccPlatform::history() const
{
    std::lock_guard guard(mutex_);
    return history_;
}

void PccPlatform::sync() const noexcept
{
    const std::uint64_t start = passes_.load();
    while (passes_.load() < start + 2)
    {
        sleepUntil(now() + std::chrono::microseconds{20});
    }
}

bool PccPlatform::waitForDoorbells(
    std::uint64_t n, std::chrono::nanoseconds timeout) const noexcept
{
    const Nanos deadline = now() + timeout;
    while (doorbells_.load() < n)
    {
        if (now() >= deadline)
        {
            return false;
        }
        sleepUntil(now() + std::chrono::microseconds{20});
    }
    return true;
}

void PccPlatform::run() noexcept
{
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    while (!stop_.load(std::memory_order_acquire))
    {
        passes_.fetch_add(1);
        takeAck();
        if (!pending_ && takeDoorbell())
        {
            pending_ = true;
            rungAt_ = now();
            doorbells_.fetch_add(1);
            std::lock_guard guard(mutex_);
            if (history_.size() < historyLimit)
            {
                history_.push_back({0, false, false, rungAt_, Nanos{0}});
            }
        }
        if (pending_ && answering_.load())
        {
            const Nanos due = rungAt_ + Nanos{latencyNs_.load()};
            const Nanos t = now();
            if (t < due)
            {
                sleepUntil(std::min(due, t + longestSleep));
                continue;
            }
            complete();
            pending_ = false;
            continue;
        }
        sleepUntil(now() + config_.pollInterval);
    }
}

bool PccPlatform::takeDoorbell() noexcept
{
    const auto mask = static_cast<std::uint32_t>(config_.doorbellWriteMask);
    const std::uint32_t value = load32(doorbell_);
    if ((value & mask) != mask)
    {
        return false;
    }
    store32(doorbell_, value & ~mask);
    return true;
}

void PccPlatform::takeAck() noexcept
{
    const auto mask = static_cast<std::uint32_t>(config_.ackWriteMask);
    if (config_.type != 2 || mask == 0)
    {
        return;
    }
    const std::uint32_t value = load32(ack_);
    if ((value & mask) == mask)
    {
        store32(ack_, value & ~mask);
        acks_.fetch_add(1);
    }
}

void PccPlatform::complete() noexcept
{
    std::atomic_thread_fence(std::memory_order_acquire);
    std::byte* base = region().data();
    const std::uint16_t command =
        *reinterpret_cast<volatile std::uint16_t*>(base + commandOffset);
    const std::span<std::byte> payload(base + headerBytes,
                                       config_.length - headerBytes);
    bool error = false;
    std::unique_lock guard(mutex_);
    if (command == cppcWrite)
    {
        std::memcpy(latched_.data(), payload.data(), payload.size());
        writeCommands_.fetch_add(1);
    }
    else if (command == cppcRead)
    {
        readCommands_.fetch_add(1);
        if (readHandler_)
        {
            readHandler_(payload);
        }
    }
    else
    {
        otherCommands_.fetch_add(1);
        error = true;
    }
    unsigned fail = failNext_.load();
    while (fail > 0 && !failNext_.compare_exchange_weak(fail, fail - 1))
    {}
    error = error || fail > 0;
    if (error)
    {
        errorReplies_.fetch_add(1);
    }
    const Nanos completedAt = now();
    const std::size_t index = doorbells_.load() - 1;
    if (index < history_.size())
    {
        history_[index].command = command;
        history_[index].completed = true;
        history_[index].error = error;
        history_[index].completedAt = completedAt;
    }
    guard.unlock();
    std::atomic_thread_fence(std::memory_order_release);
    volatile std::uint16_t* status =
        reinterpret_cast<volatile std::uint16_t*>(base + statusOffset);
    *status = static_cast<std::uint16_t>(
        *status | commandComplete | (error ? errorBit : 0));
}

} // namespace cppc::sim
