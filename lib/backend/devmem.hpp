// SPDX-License-Identifier: Apache-2.0
// Direct register access: a RegisterMap over mmap(2) of /dev/mem, and the
// rules that keep it away from registers the kernel writes: those of CPUs
// the kernel's CPPC cpufreq driver drives, and PCC subspaces.
//
// Mapping a page that holds SystemMemory _CPC registers and storing to it
// is the fastest way to request performance, and safe only while nobody
// else drives the same registers. For plain registers the other writer is
// the kernel's cppc_cpufreq, which writes Desired on every frequency
// change and also, whatever the governor (userspace too), when a policy
// starts or stops, when limits change, on CPU hotplug and when it is
// unloaded: direct access is refused while it is loaded (see
// refuseWhileKernelDrivesCppc). For a PCC subspace the kernel's mailbox
// client owns the channel (doorbell, command and completion), and a
// second initiator would corrupt its commands. The kernel does not say
// which subspaces it holds, so that rule is conservative (see
// refuseDirectPcc).
#pragma once

#include "lib/access_plan.hpp"
#include "lib/backend/fd.hpp"
#include "lib/register_io.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace cppc::backend
{

// Maps SystemMemory registers page by page from a memory device: /dev/mem
// on hardware, a plain file standing in for it in tests.
class DevMemMap final : public RegisterMap
{
  public:
    // Opens `device` O_RDWR | O_SYNC | O_CLOEXEC (O_SYNC asks for uncached
    // mappings where the architecture distinguishes). Throws
    // std::system_error naming the path.
    explicit DevMemMap(std::filesystem::path device = "/dev/mem");

    DevMemMap(const DevMemMap&) = delete;
    DevMemMap& operator=(const DevMemMap&) = delete;

    // Unmaps every page.
    ~DevMemMap() override;

    // Memory for `bytes` bytes at physical `address`: the pages covering
    // them are mapped MAP_SHARED read-write at the page-aligned offset on
    // first use and kept until destruction; later registers on the same
    // pages reuse the mapping. Throws std::invalid_argument for a space
    // other than SystemMemory, zero bytes or an address range that does not
    // fit an off_t, or beyond the end of a regular file; std::system_error
    // naming the device when mmap fails.
    std::byte* map(AddressSpace space, std::uint64_t address,
                   std::size_t bytes) override;

    // How many mappings are held (for tests and diagnostics).
    std::size_t mappingCount() const noexcept
    {
        return mappings_.size() + retired_.size();
    }

  private:
    struct Mapping
    {
        std::byte* base = nullptr;
        std::size_t length = 0;
    };

    std::filesystem::path device_;
    Fd fd_;
    std::uint64_t pageSize_;
    bool regularFile_ = false;
    std::uint64_t fileSize_ = 0;
    std::map<std::uint64_t, Mapping> mappings_; // by first page address
    // Mappings replaced by longer ones from the same page; still in use.
    std::vector<Mapping> retired_;
};

// What the kernel shows of its own use of PCC.
struct KernelPccEvidence
{
    // /sys/bus/platform/drivers/PCCT exists: Linux's PCC mailbox controller
    // (drivers/mailbox/pcc.c registers a platform driver named "PCCT") is
    // bound, so kernel clients can hold any subspace's channel.
    bool mailboxController = false;
    // Some /sys/devices/system/cpu/cpuN/acpi_cppc exists: Linux's CPPC
    // library probed the _CPC objects, and for registers in PCC it has
    // requested their subspace's channel and keeps it.
    bool cppcProbed = false;
    // The paths found, for messages.
    std::vector<std::string> paths;

    bool any() const noexcept
    {
        return mailboxController || cppcProbed;
    }
};

// Looks under `root` for the evidence above.
KernelPccEvidence probeKernelPcc(const std::filesystem::path& root);

// The PCC subspaces the plan's usable CPUs use, ascending, each once.
std::vector<std::uint8_t> pccSubspaces(const AccessPlan& plan);

// The rule for direct access, which every backend writing through
// DevMemMap calls before its first write: DevMemMap reaches SystemMemory
// only and drives no PCC channel, so a plan with a usable CPU whose
// performance controls are in PCC (CpuPlan::pccControl) is refused. The
// error is Errc::pccOwnedByKernel when `evidence` shows that the kernel
// drives PCC (a second initiator would corrupt its commands; user space
// cannot see which channels kernel clients hold, so either sign covers
// every subspace), Errc::pccUnavailable otherwise. Throws std::system_error
// naming the first such CPU, its subspace, the evidence found and the
// kernel backend as the way; returns when no usable CPU has its controls in
// PCC.
void refuseDirectPcc(const AccessPlan& plan, const KernelPccEvidence& evidence);

// What the kernel shows of its CPPC cpufreq driver (cppc_cpufreq), which
// writes the same Desired registers: the paths found, for messages.
struct KernelCppcDriverEvidence
{
    // <root>/sys/devices/system/cpu/cpufreq/policyN/scaling_driver files
    // that name cppc_cpufreq, and <root>/sys/module/cppc_cpufreq when it
    // exists (the module is loaded: this covers the policies whose CPUs
    // are all offline, whose files cannot be read).
    std::vector<std::string> paths;

    bool any() const noexcept
    {
        return !paths.empty();
    }
};

// Looks under `root` for the evidence above. A scaling_driver that cannot
// be read is no evidence (the module directory covers that case).
KernelCppcDriverEvidence probeKernelCppcDriver(
    const std::filesystem::path& root);

// The rule for direct access to SystemMemory registers, which every
// backend writing through DevMemMap calls before its first write: while
// cppc_cpufreq is loaded its writes and the direct ones overwrite each
// other, so direct access is refused. Throws std::system_error
// (Errc::cppcDriverLoaded) naming the evidence found and the two ways out
// (unload cppc_cpufreq, or use the kernel backend); returns when
// `evidence` is empty.
void refuseWhileKernelDrivesCppc(const KernelCppcDriverEvidence& evidence);

} // namespace cppc::backend
