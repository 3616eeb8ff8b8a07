// SPDX-License-Identifier: Apache-2.0
// Per-CPU resume-latency arbitration: many clients ask for latency limits on
// sets of CPUs, and each CPU's single sysfs request,
// /sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us, gets the
// strictest (smallest) limit among the live requests that cover it.
//
// The attribute, as the kernel reads and writes it (drivers/base/power/
// sysfs.c, Documentation/ABI/testing/sysfs-devices-power):
//   - reading "0" means no constraint: any resume latency is acceptable;
//   - reading "n/a" means no resume latency at all is tolerated (the
//     strictest setting, which keeps the CPU out of every idle state that
//     needs time to leave);
//   - reading N > 0 means a resume latency of at most N microseconds;
//   - writing accepts a decimal 0..2147483646 (0 again meaning no
//     constraint) or "n/a"; negative numbers and 2147483647 (the kernel's
//     internal "no constraint") are refused with EINVAL.
// A request for 0 us therefore means "no latency at all" and is written as
// "n/a", never as "0", which would remove the constraint instead.
//
// Ownership: while at least one request covers a CPU, the arbiter owns that
// CPU's attribute and writes the strictest request even when it is looser
// than what was found there. The value found is saved before the first
// write and put back as it was read (with the newline sysfs prints), when the
// last request for the CPU goes, on restore() and in the destructor. The saved
// values are also kept in a state file (written atomically: temporary file,
// fsync, rename, fsync of the directory) before each CPU is first written, so
// that restoreFromFile() can undo the changes of a process that crashed. A
// restore that cannot write every value back leaves the state file holding
// exactly the CPUs that are not back; the file goes only when all are.
//
// Library code: no logging. Not thread-safe.
#pragma once

#include "lib/backend/attribute_io.hpp"
#include "lib/backend/restore_result.hpp"
#include "lib/cpu_list.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace cppcgov::daemon
{

// The largest request accepted: 100 s. Anything above is surely a unit
// mistake, and the kernel's own limit is 2147483646 us.
inline constexpr std::uint32_t maxLatencyUs = 100'000'000;

// CPU numbers at or above cppc::maxCpus (lib/cpu_list.hpp) are refused without
// looking at sysfs.

// The attribute of `cpu` under `root`:
// root/sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us.
std::filesystem::path latencyAttribute(const std::filesystem::path& root,
                                       unsigned cpu);

// The text written for a request of `latencyUs`: "n/a\n" for 0, the decimal
// number and a newline otherwise.
std::string latencyText(std::uint32_t latencyUs);

// Whether `text` (as read, without its newline) is a value the kernel
// prints and accepts back: "n/a" or a decimal 0..2147483646.
bool validLatencyValue(std::string_view text) noexcept;

// The state file's text for `saved` (CPU -> value as read), and back. The
// format is line-based: a header "cppcgov-latency-state 1", then per CPU
// "cpu<N> <value>". Parsing is strict (every value must pass
// validLatencyValue, no CPU twice) and throws std::system_error
// (cppc::Errc::malformedAttribute) naming `file`.
std::string formatLatencyState(const std::map<unsigned, std::string>& saved);
std::map<unsigned, std::string> parseLatencyState(
    std::string_view text, const std::filesystem::path& file);

class LatencyArbiter
{
  public:
    // Arbitrates the CPUs under `root` ("/" in production). `stateFile` is
    // where the saved values are recorded (under /run for the daemon; not
    // under the root prefix). Nothing is read or written until the first
    // request; the attributes are read and written through `io` (which
    // must outlive the arbiter). Throws std::system_error
    // (std::errc::file_exists) naming the state file when it already
    // exists: a previous run's changes must be undone with
    // restoreFromFile() first.
    LatencyArbiter(
        std::filesystem::path root, std::filesystem::path stateFile,
        const cppc::backend::AttributeIo& io = cppc::backend::sysfsIo());

    LatencyArbiter(const LatencyArbiter&) = delete;
    LatencyArbiter& operator=(const LatencyArbiter&) = delete;

    // restore(), if it has not run.
    ~LatencyArbiter();

    // Adds request `id` limiting the resume latency of every CPU in `cpus`
    // (duplicates are ignored) to `latencyUs` microseconds, 0 meaning no
    // latency at all. Each CPU whose strictest request changes is written at
    // once. Errors, after which nothing has changed:
    //   cppc::Errc::backendStopped    after restore();
    //   cppc::Errc::valueOutOfRange   latencyUs above maxLatencyUs;
    //   std::errc::invalid_argument   `cpus` empty;
    //   std::errc::file_exists        `id` is already live;
    //   cppc::Errc::noSuchCpu         a CPU at or above cppc::maxCpus, or one
    //                                 without the attribute;
    //   cppc::Errc::malformedAttribute a CPU's current value is not one the
    //                                 kernel prints (it could not be put
    //                                 back);
    //   an errno                      reading an attribute, writing the state
    //                                 file, or writing an attribute (the
    //                                 CPUs already written are put back).
    [[nodiscard]] std::error_code add(std::uint64_t id,
                                      std::span<const unsigned> cpus,
                                      std::uint32_t latencyUs);

    // Ends request `id`: each of its CPUs gets the strictest remaining
    // request, or its saved value when none is left (and is then no longer
    // owned). The request is gone even when a write fails; the first error
    // is returned (the errno of a write, or of updating the state file), and
    // a CPU whose saved value could not be written back stays owned, to be
    // retried by restore(). std::errc::invalid_argument when `id` is not
    // live, cppc::Errc::backendStopped after restore().
    [[nodiscard]] std::error_code remove(std::uint64_t id);

    // The strictest live request covering `cpu`, in microseconds, or nothing
    // when no request covers it.
    std::optional<std::uint32_t> effective(unsigned cpu) const;

    // The CPUs owned and the value each had when first written, as read
    // (without its newline); after restore(), those it could not put back.
    const std::map<unsigned, std::string>& saved() const noexcept
    {
        return saved_;
    }

    // Ends every request and writes every saved value back, carrying on
    // past failures (each a writeSaved failure whose record is "cpu<N>").
    // Then the state file is removed when every value is back, and
    // otherwise rewritten to hold exactly the CPUs that are not, so that
    // restoreFromFile() can finish the job. Runs once (later calls return
    // an empty result); add() and remove() return
    // cppc::Errc::backendStopped afterwards. Never throws.
    cppc::backend::RestoreResult restore() noexcept;

    // Writes back what the state file at `stateFile` records, under `root`:
    // for a start after a crash, or a stop hook. The file is then removed
    // when every value is back, or rewritten to hold exactly the CPUs that
    // are not. An empty result when there is no file; a readStateFile or
    // parseStateFile failure when it cannot be read or is malformed (it is
    // then kept as it is, for inspection). Throws only std::bad_alloc.
    static cppc::backend::RestoreResult restoreFromFile(
        const std::filesystem::path& root,
        const std::filesystem::path& stateFile,
        const cppc::backend::AttributeIo& io = cppc::backend::sysfsIo());

  private:
    struct Request
    {
        std::vector<unsigned> cpus; // sorted, unique
        std::uint32_t latencyUs = 0;
    };

    // Writes `saved_` to the state file, or removes it when empty.
    std::error_code syncStateFile() noexcept;

    std::filesystem::path root_;
    std::filesystem::path stateFile_;
    const cppc::backend::AttributeIo& io_;
    std::map<std::uint64_t, Request> requests_;
    std::map<unsigned, std::string> saved_;     // owned CPUs: value found
    std::map<unsigned, std::uint32_t> written_; // owned CPUs: value written
    bool stopped_ = false;
};

} // namespace cppcgov::daemon
