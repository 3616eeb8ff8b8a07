// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/pcc_responder.hpp"

#include "tests/vm/platform/guest_memory.hpp"

namespace cppcgov::platform
{

namespace
{

constexpr std::uint32_t pccSignature = 0x50434300;
constexpr std::size_t commandOffset = 4;
constexpr std::size_t statusOffset = 6;

} // namespace

std::optional<PccMode> pccModeNamed(std::string_view name) noexcept
{
    if (name == "answer")
    {
        return PccMode::answer;
    }
    if (name == "never")
    {
        return PccMode::never;
    }
    if (name == "error")
    {
        return PccMode::error;
    }
    return std::nullopt;
}

PccResponder::PccResponder(unsigned id, std::byte* region, std::byte* doorbell,
                           unsigned doorbellWidth, std::uint64_t doorbellWrite,
                           std::uint64_t latencyNs) :
    id_(id),
    region_(region), doorbell_(doorbell), doorbellWidth_(doorbellWidth),
    doorbellWrite_(doorbellWrite), latency_(latencyNs)
{}

void PccResponder::reset()
{
    storeUnit(region_, 32, pccSignature | id_);
    storeUnit(region_ + statusOffset, 16, pccCommandComplete);
    storeUnit(doorbell_, doorbellWidth_, 0);
    busy_ = false;
    hung_ = false;
}

std::optional<std::uint16_t> PccResponder::poll(std::uint64_t nowNs)
{
    const std::uint64_t bell = loadUnit(doorbell_, doorbellWidth_);
    if ((bell & doorbellWrite_) != 0)
    {
        // Taken: the doorbell is a write-to-ring register, cleared once
        // seen (only its write bits; the OS preserves the rest).
        mergeUnit(doorbell_, doorbellWidth_, doorbellWrite_, 0);
        ++tally_.doorbells;
        if (busy_ || hung_)
        {
            ++tally_.ringsWhileBusy;
        }
        if (!busy_)
        {
            busy_ = true;
            hung_ = false;
            command_ = static_cast<std::uint16_t>(
                loadUnit(region_ + commandOffset, 16));
            dueNs_ = nowNs + latency_;
            if (mode_ == PccMode::never)
            {
                hung_ = true;
                busy_ = false;
                ++tally_.unanswered;
            }
        }
    }
    if (busy_ && nowNs >= dueNs_)
    {
        return command_;
    }
    return std::nullopt;
}

void PccResponder::setMode(PccMode m, std::uint64_t latencyNs)
{
    mode_ = m;
    latency_ = latencyNs;
    if (hung_ && m != PccMode::never)
    {
        // Due at once: the next poll hands it to the owner, who acts on
        // the payload as it is now, and answer() completes it.
        hung_ = false;
        busy_ = true;
        dueNs_ = 0;
    }
}

void PccResponder::answer()
{
    if (!busy_)
    {
        return;
    }
    busy_ = false;
    switch (command_)
    {
        case cppcRead:
            ++tally_.reads;
            break;
        case cppcWrite:
            ++tally_.writes;
            break;
        default:
            ++tally_.others;
            break;
    }
    std::uint16_t status = pccCommandComplete;
    if (mode_ == PccMode::error)
    {
        status |= pccError;
        ++tally_.errors;
    }
    mergeUnit(region_ + statusOffset, 16, pccCommandComplete | pccError,
              status);
}

} // namespace cppcgov::platform
