// SPDX-License-Identifier: Apache-2.0
// The platform's side of one PCC subspace (ACPI 6.5, 14.1, generic
// communications subspace): a shared region that starts with the header
// (signature 0x50434300 | subspace id, a 16-bit command, a 16-bit status)
// and holds the payload after it, and a doorbell register in memory.
//
// The OS writes the command, clears Command Complete (status bit 0) and
// rings the doorbell (sets its write bits). The responder sees the
// doorbell on its next poll, clears it, and answers `latency` later: the
// owner reads or fills the payload for the command (CPPC: 0 read, 1
// write) and the responder sets Command Complete, with the Error bit (2)
// when told to fail. Modes: answer (after the latency), never (the
// command is taken and never completed: a hung mailbox), error (completed
// with the Error bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cppcgov::platform
{

inline constexpr std::uint16_t pccCommandComplete = 1U << 0;
inline constexpr std::uint16_t pccError = 1U << 2;
inline constexpr std::size_t pccHeaderBytes = 8;
inline constexpr std::uint16_t cppcRead = 0;
inline constexpr std::uint16_t cppcWrite = 1;

enum class PccMode
{
    answer,
    never,
    error,
};

[[nodiscard]] std::optional<PccMode> pccModeNamed(std::string_view) noexcept;

struct PccCounts
{
    std::uint64_t doorbells = 0; // rings seen
    std::uint64_t reads = 0;     // commands answered, by kind
    std::uint64_t writes = 0;
    std::uint64_t others = 0;
    std::uint64_t errors = 0;         // answered with the Error bit
    std::uint64_t unanswered = 0;     // taken in mode never
    std::uint64_t ringsWhileBusy = 0; // a ring before the last was answered
};

class PccResponder
{
  public:
    // `region`: the shared region (header and payload); `doorbell`: the
    // doorbell register's unit of `doorbellWidth` bits, rung when any of
    // `doorbellWrite` is set.
    PccResponder(unsigned id, std::byte* region, std::byte* doorbell,
                 unsigned doorbellWidth, std::uint64_t doorbellWrite,
                 std::uint64_t latencyNs);

    // Writes the signature and sets Command Complete (idle), as the
    // platform does at reset.
    void reset();

    // Looks at the doorbell at `nowNs`. Returns the command due to be
    // answered now (the owner acts on the payload, then calls answer()).
    [[nodiscard]] std::optional<std::uint16_t> poll(std::uint64_t nowNs);
    // Completes the command poll() returned, as the mode says.
    void answer();

    // A mailbox that hung and is told to answer again acts on the command
    // it held, as firmware that comes back: poll() returns it at once and
    // the owner acts on the payload as the OS left it (the last Desired
    // the OS wrote, though it gave up on the command), so the OS can go on.
    void setMode(PccMode m, std::uint64_t latencyNs);
    [[nodiscard]] PccMode currentMode() const noexcept
    {
        return mode_;
    }
    [[nodiscard]] std::uint64_t latencyNs() const noexcept
    {
        return latency_;
    }
    void resetCounts() noexcept
    {
        tally_ = PccCounts{};
    }
    [[nodiscard]] const PccCounts& counts() const noexcept
    {
        return tally_;
    }
    [[nodiscard]] std::byte* payload() const noexcept
    {
        return region_ + pccHeaderBytes;
    }

  private:
    unsigned id_;
    std::byte* region_;
    std::byte* doorbell_;
    unsigned doorbellWidth_;
    std::uint64_t doorbellWrite_;
    std::uint64_t latency_;
    PccMode mode_ = PccMode::answer;
    bool busy_ = false;
    bool hung_ = false;
    std::uint64_t dueNs_ = 0;
    std::uint16_t command_ = 0;
    PccCounts tally_;
};

} // namespace cppcgov::platform
