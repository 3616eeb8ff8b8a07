// SPDX-License-Identifier: Apache-2.0
#include "channel.hpp"

#include "lib/error.hpp"
#include "lib/text.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

namespace cppc::pcc
{
namespace
{

constexpr Nanos rateWindow = std::chrono::seconds{60};
constexpr Nanos minPollInterval = std::chrono::microseconds{2};
constexpr Nanos maxPollInterval = std::chrono::microseconds{50};

std::uint64_t fieldLimit(unsigned width) noexcept
{
    return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// The payload bytes a field touches.
std::size_t fieldBytes(const PccRegister& reg) noexcept
{
    return (std::size_t{reg.bitOffset} + reg.bitWidth + 7U) / 8U;
}

std::string label(std::uint8_t id)
{
    return "PCC subspace " + std::to_string(id);
}

} // namespace

Channel::Channel(const acpi::PccSubspace& subspace, std::span<std::byte> region,
                 RegisterMap& registers, ChannelOptions options) :
    id_(subspace.id),
    ack_(false), batching_(options.batching), batchWindow_(options.batchWindow),
    timeout_(std::max(options.timeoutFloor,
                      Nanos{std::chrono::microseconds{
                          std::uint64_t{options.timeoutMultiplier} *
                          subspace.nominalLatencyUs}})),
    pollInterval_(
        options.pollInterval > Nanos{0}
            ? options.pollInterval
            : std::clamp(
                  Nanos{std::chrono::microseconds{subspace.nominalLatencyUs}} /
                      8,
                  minPollInterval, maxPollInterval)),
    turnaround_(std::chrono::microseconds{subspace.minRequestTurnaroundUs}),
    maxPerMinute_(subspace.maxPeriodicAccessRate),
    clock_(options.clock != nullptr ? options.clock : &monotonicClock()),
    base_(region.data()),
    payloadBytes_(region.size() > headerBytes ? region.size() - headerBytes : 0)
{
    if (!subspace.knownType || subspace.type > 2)
    {
        throw ChannelError(
            label(id_) + ": type " + std::to_string(subspace.type) +
            " is not supported (the channel drives types 0, "
            "1 and 2, whose status is in shared memory)");
    }
    if (region.size() < headerBytes)
    {
        throw ChannelError(
            label(id_) + ": shared memory of " + std::to_string(region.size()) +
            " bytes is shorter than its 8-byte header");
    }
    if (reinterpret_cast<std::uintptr_t>(base_) % 8 != 0)
    {
        throw ChannelError(label(id_) + ": shared memory is not 8-byte "
                                        "aligned");
    }
    const std::uint32_t expected = signatureBase | id_;
    const std::uint32_t found =
        *reinterpret_cast<volatile std::uint32_t*>(base_);
    if (found != expected)
    {
        throw ChannelError(label(id_) + ": shared memory signature " +
                           hex(found) + ", expected " + hex(expected));
    }
    doorbell_ =
        bindRegister(subspace, subspace.doorbell, subspace.doorbellPreserveMask,
                     subspace.doorbellWriteMask, "doorbell", registers);
    if (subspace.isType(acpi::PccType::hwReducedType2) &&
        !subspace.platformAck.isNull())
    {
        platformAck_ = bindRegister(
            subspace, subspace.platformAck, subspace.platformAckPreserveMask,
            subspace.platformAckWriteMask, "platform ack", registers);
        ack_ = true;
    }
}

auto Channel::bindRegister(const acpi::PccSubspace& s, const RegisterDesc& r,
                           std::uint64_t preserve, std::uint64_t set,
                           const char* what, RegisterMap& registers)
    -> RegisterRef
{
    const unsigned bits =
        r.accessSize != 0 ? 8U << (r.accessSize - 1) : r.bitWidth;
    if (r.isNull() || (!r.inSpace(AddressSpace::systemMemory) &&
                       !r.inSpace(AddressSpace::systemIo)))
    {
        throw ChannelError(label(s.id) + ": the " + what +
                           " register is not a SystemMemory or SystemIO "
                           "register");
    }
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    {
        throw ChannelError(
            label(s.id) + ": the " + what + " register is " +
            std::to_string(bits) + " bits wide, not 8, 16, 32 or 64");
    }
    const auto bytes = static_cast<std::uint8_t>(bits / 8);
    return {registers.map(static_cast<AddressSpace>(r.space), r.address, bytes),
            bytes, preserve, set};
}

std::error_code Channel::check(std::uint8_t subspace,
                               std::span<const PccRegister> regs) const noexcept
{
    if (subspace != id_)
    {
        return Errc::pccUnavailable;
    }
    for (const PccRegister& r : regs)
    {
        if (r.bitWidth == 0 || r.bitOffset + r.bitWidth > 64 ||
            r.offset > payloadBytes_ ||
            fieldBytes(r) > payloadBytes_ - r.offset)
        {
            return Errc::pccBadRegister;
        }
    }
    return {};
}

std::error_code Channel::write(std::uint8_t subspace,
                               std::span<const PccWrite> writes) noexcept
{
    if (subspace != id_)
    {
        return Errc::pccUnavailable;
    }
    for (const PccWrite& w : writes)
    {
        if (auto ec = check(subspace, std::span(&w.reg, 1)))
        {
            return ec;
        }
        if ((w.value & ~fieldLimit(w.reg.bitWidth)) != 0)
        {
            return Errc::valueOutOfRange;
        }
    }
    if (writes.empty())
    {
        return {};
    }
    Request request;
    request.writes = writes;
    return submit(request);
}

std::error_code Channel::read(std::uint8_t subspace,
                              std::span<const PccRegister> regs,
                              std::span<std::uint64_t> values) noexcept
{
    if (auto ec = check(subspace, regs))
    {
        return ec;
    }
    if (values.size() != regs.size())
    {
        return Errc::pccBadRegister;
    }
    Request request;
    request.isRead = true;
    request.regs = regs;
    request.values = values;
    return submit(request);
}

std::error_code Channel::submit(Request& me) noexcept
{
    std::unique_lock lock(mutex_);
    if (tail_ != nullptr)
    {
        tail_->next = &me;
    }
    else
    {
        head_ = &me;
    }
    tail_ = &me;
    ++queued_;
    while (!me.done)
    {
        if (!sending_ && head_ == &me)
        {
            runSender(lock, me);
            continue;
        }
        changed_.wait(lock);
    }
    (me.isRead ? readRequests_ : writeRequests_)
        .fetch_add(1, std::memory_order_relaxed);
    return me.result;
}

// Called with the lock held by the request at the head of the queue when
// no command is being prepared or in flight; returns with the lock held
// and `me` done.
void Channel::runSender(std::unique_lock<std::mutex>& lock,
                        Request& me) noexcept
{
    sending_ = true;
    if (!me.isRead)
    {
        if (batching_ && batchWindow_ > Nanos{0})
        {
            lock.unlock();
            clock_->sleepUntil(clock_->now() + batchWindow_);
            lock.lock();
        }
        Request* batch = takeWrites(batching_);
        lock.unlock();
        const std::error_code result = transact(commandWrite, batch);
        lock.lock();
        finish(batch, result);
    }
    else
    {
        head_ = me.next;
        if (tail_ == &me)
        {
            tail_ = nullptr;
        }
        me.next = nullptr;
        --queued_;
        Request* flush = batching_ ? takeWrites(true) : nullptr;
        lock.unlock();
        if (flush != nullptr)
        {
            const std::error_code result = transact(commandWrite, flush);
            lock.lock();
            finish(flush, result);
            changed_.notify_all();
            lock.unlock();
        }
        const std::error_code result = transact(commandRead, nullptr);
        if (!result)
        {
            for (std::size_t i = 0; i < me.regs.size(); ++i)
            {
                me.values[i] = loadField(me.regs[i]);
            }
        }
        lock.lock();
        me.result = result;
        me.done = true;
    }
    sending_ = false;
    changed_.notify_all();
}

// Unlinks the queued writes (all of them, or only the first) and returns
// them as a list in queue order. Reads stay queued in order.
auto Channel::takeWrites(bool all) noexcept -> Request*
{
    Request* taken = nullptr;
    Request** takenTail = &taken;
    Request** link = &head_;
    Request* kept = nullptr; // the last request left in the queue
    for (Request* r = head_; r != nullptr;)
    {
        Request* next = r->next;
        if (r->isRead)
        {
            kept = r;
            link = &r->next;
        }
        else
        {
            *link = next;
            if (tail_ == r)
            {
                tail_ = kept;
            }
            r->next = nullptr;
            *takenTail = r;
            takenTail = &r->next;
            --queued_;
            if (!all)
            {
                break;
            }
        }
        r = next;
    }
    return taken;
}

void Channel::finish(Request* list, std::error_code result) noexcept
{
    while (list != nullptr)
    {
        Request* next = list->next;
        list->result = result;
        list->done = true; // its owner may return as soon as we unlock
        list = next;
    }
}

std::error_code Channel::transact(std::uint16_t command,
                                  const Request* writes) noexcept
{
    auto complete = [this] { return commandComplete(); };
    if (platformOwns_)
    {
        if (!waitUntil(*clock_, complete, clock_->now() + timeout_,
                       pollInterval_))
        {
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            return Errc::pccTimeout;
        }
        platformOwns_ = false;
        haveCompletion_ = true;
        lastCompletion_ = clock_->now();
    }
    if (maxPerMinute_ != 0)
    {
        if (rateLeft_ == 0)
        {
            const Nanos now = clock_->now();
            if (rateWindowStarted_ && now - rateWindowStart_ < rateWindow)
            {
                rateLimited_.fetch_add(1, std::memory_order_relaxed);
                return Errc::pccRateLimited;
            }
            rateWindowStarted_ = true;
            rateWindowStart_ = now;
            rateLeft_ = maxPerMinute_;
        }
        --rateLeft_;
    }
    if (haveCompletion_ && turnaround_ > Nanos{0})
    {
        clock_->sleepUntil(lastCompletion_ + turnaround_);
    }
    for (const Request* r = writes; r != nullptr; r = r->next)
    {
        for (const PccWrite& w : r->writes)
        {
            storeField(w.reg, w.value);
        }
    }
    *reinterpret_cast<volatile std::uint16_t*>(base_ + commandOffset) = command;
    storeStatus(static_cast<std::uint16_t>(
        loadStatus() & ~(statusCommandComplete | statusError)));
    std::atomic_thread_fence(std::memory_order_release);
    ring(doorbell_);
    const Nanos rung = clock_->now();
    platformOwns_ = true;
    doorbells_.fetch_add(1, std::memory_order_relaxed);
    (command == commandWrite ? writeCommands_ : readCommands_)
        .fetch_add(1, std::memory_order_relaxed);
    if (!waitUntil(*clock_, complete, rung + timeout_, pollInterval_))
    {
        timeouts_.fetch_add(1, std::memory_order_relaxed);
        return Errc::pccTimeout;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    platformOwns_ = false;
    haveCompletion_ = true;
    lastCompletion_ = clock_->now();
    if (ack_)
    {
        ring(platformAck_);
        acks_.fetch_add(1, std::memory_order_relaxed);
    }
    const std::uint16_t status = loadStatus();
    if ((status & statusError) != 0)
    {
        storeStatus(static_cast<std::uint16_t>(status & ~statusError));
        platformErrors_.fetch_add(1, std::memory_order_relaxed);
        return Errc::pccPlatformError;
    }
    return {};
}

bool Channel::commandComplete() const noexcept
{
    return (loadStatus() & statusCommandComplete) != 0;
}

std::uint16_t Channel::loadStatus() const noexcept
{
    return *reinterpret_cast<const volatile std::uint16_t*>(
        base_ + statusOffset);
}

void Channel::storeStatus(std::uint16_t value) noexcept
{
    *reinterpret_cast<volatile std::uint16_t*>(base_ + statusOffset) = value;
}

void Channel::ring(const RegisterRef& reg) noexcept
{
    const std::uint64_t old = MappedIo::load(reg.ptr, reg.bytes);
    MappedIo::store(reg.ptr, reg.bytes, (old & reg.preserve) | reg.set);
}

// Little-endian, a byte at a time: PCC payload fields need not be aligned
// (the Altra's 64-bit counters sit at 4-byte offsets).
void Channel::storeField(const PccRegister& reg, std::uint64_t value) noexcept
{
    volatile std::uint8_t* p = reinterpret_cast<volatile std::uint8_t*>(
        base_ + headerBytes + reg.offset);
    const std::size_t n = fieldBytes(reg);
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < n; ++i)
    {
        word |= std::uint64_t{p[i]} << (8 * i);
    }
    const std::uint64_t mask = fieldLimit(reg.bitWidth) << reg.bitOffset;
    word = (word & ~mask) | ((value << reg.bitOffset) & mask);
    for (std::size_t i = 0; i < n; ++i)
    {
        p[i] = static_cast<std::uint8_t>(word >> (8 * i));
    }
}

std::uint64_t Channel::loadField(const PccRegister& reg) const noexcept
{
    const volatile std::uint8_t* p =
        reinterpret_cast<const volatile std::uint8_t*>(
            base_ + headerBytes + reg.offset);
    const std::size_t n = fieldBytes(reg);
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < n; ++i)
    {
        word |= std::uint64_t{p[i]} << (8 * i);
    }
    return (word >> reg.bitOffset) & fieldLimit(reg.bitWidth);
}

std::size_t Channel::queuedRequests() const noexcept
{
    std::lock_guard guard(mutex_);
    return queued_;
}

ChannelStats Channel::stats() const noexcept
{
    return {doorbells_.load(), writeCommands_.load(),  readCommands_.load(),
            acks_.load(),      writeRequests_.load(),  readRequests_.load(),
            timeouts_.load(),  platformErrors_.load(), rateLimited_.load()};
}

} // namespace cppc::pcc
