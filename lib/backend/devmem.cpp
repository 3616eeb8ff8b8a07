// SPDX-License-Identifier: Apache-2.0
#include "devmem.hpp"

#include "lib/backend/sysfs.hpp"
#include "lib/error.hpp"
#include "lib/text.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace cppc::backend
{
namespace
{

// "'a', 'b'": the evidence paths as the refusals name them.
std::string quotedPaths(const std::vector<std::string>& paths)
{
    std::string out;
    for (const std::string& p : paths)
    {
        out += (out.empty() ? "'" : ", '") + p + "'";
    }
    return out;
}

} // namespace

DevMemMap::DevMemMap(std::filesystem::path device) :
    device_(std::move(device)), fd_(Fd::open(device_, O_RDWR | O_SYNC)),
    pageSize_(static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)))
{
    struct stat st
    {};
    if (::fstat(fd_.get(), &st) != 0)
    {
        throw std::system_error(errno, std::system_category(),
                                "'" + device_.string() + "'");
    }
    regularFile_ = S_ISREG(st.st_mode);
    fileSize_ = static_cast<std::uint64_t>(st.st_size);
}

DevMemMap::~DevMemMap()
{
    for (const auto& [page, m] : mappings_)
    {
        ::munmap(m.base, m.length);
    }
    for (const Mapping& m : retired_)
    {
        ::munmap(m.base, m.length);
    }
}

std::byte* DevMemMap::map(AddressSpace space, std::uint64_t address,
                          std::size_t bytes)
{
    const std::string where = "'" + device_.string() + "' at " + hex(address);
    if (space != AddressSpace::systemMemory)
    {
        throw std::invalid_argument(
            where + ": only SystemMemory registers can be mapped");
    }
    constexpr auto offMax =
        static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
    if (bytes == 0 || address > offMax || bytes > offMax - address)
    {
        throw std::invalid_argument(
            where + ": " + std::to_string(bytes) + " bytes cannot be mapped");
    }
    const std::uint64_t end = address + bytes;
    if (regularFile_ && end > fileSize_)
    {
        throw std::invalid_argument(where + ": " + std::to_string(bytes) +
                                    " bytes run past the end of the file (" +
                                    std::to_string(fileSize_) + " bytes)");
    }
    // A mapping starting at or below the address that reaches its end.
    // There are a handful at most (the pages holding _CPC registers).
    const auto last = mappings_.upper_bound(address);
    for (auto it = mappings_.begin(); it != last; ++it)
    {
        if (it->first + it->second.length >= end)
        {
            return it->second.base + (address - it->first);
        }
    }
    const std::uint64_t first = address / pageSize_ * pageSize_;
    const std::uint64_t length =
        (end - first + pageSize_ - 1) / pageSize_ * pageSize_;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd_.get(), static_cast<off_t>(first));
    if (p == MAP_FAILED)
    {
        throw std::system_error(errno, std::system_category(), where);
    }
    auto* base = static_cast<std::byte*>(p);
    const Mapping m{base, static_cast<std::size_t>(length)};
    auto [slot, inserted] = mappings_.try_emplace(first, m);
    if (!inserted)
    {
        // A shorter mapping of the same first page: replace it. Pointers
        // handed out into it stay valid: they are kept mapped.
        retired_.push_back(slot->second);
        slot->second = m;
    }
    return base + (address - first);
}

KernelPccEvidence probeKernelPcc(const std::filesystem::path& root)
{
    KernelPccEvidence e;
    std::error_code ec;
    const std::filesystem::path pcct = root / "sys/bus/platform/drivers/PCCT";
    if (std::filesystem::exists(pcct, ec))
    {
        e.mailboxController = true;
        e.paths.push_back(pcct.string());
    }
    const std::filesystem::path cpus = root / "sys/devices/system/cpu";
    for (const auto& entry : std::filesystem::directory_iterator(cpus, ec))
    {
        const std::string name = entry.path().filename().string();
        if (name.rfind("cpu", 0) != 0 || name.size() == 3 ||
            name.find_first_not_of("0123456789", 3) != std::string::npos)
        {
            continue;
        }
        const std::filesystem::path cppc = entry.path() / "acpi_cppc";
        std::error_code ec2;
        if (std::filesystem::exists(cppc, ec2))
        {
            e.cppcProbed = true;
            e.paths.push_back(cppc.string());
            break;
        }
    }
    return e;
}

std::vector<std::uint8_t> pccSubspaces(const AccessPlan& plan)
{
    std::vector<std::uint8_t> ids;
    for (unsigned i = 0; i < plan.cpuCount(); ++i)
    {
        const CpuPlan& c = plan.cpu(i);
        if (!c.usable || !c.pccSubspace)
        {
            continue;
        }
        const bool usesPcc = std::any_of(c.regs.begin(), c.regs.end(),
                                         [](const RegisterPlan& r) {
            return r.access == AccessClass::pcc;
        });
        if (usesPcc)
        {
            ids.push_back(*c.pccSubspace);
        }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

void refuseDirectPcc(const AccessPlan& plan, const KernelPccEvidence& evidence)
{
    for (unsigned i = 0; i < plan.cpuCount(); ++i)
    {
        const CpuPlan& c = plan.cpu(i);
        const CpcDescriptor* d = plan.descriptor(i);
        if (d == nullptr || !c.usable || !c.pccControl)
        {
            continue;
        }
        const std::string where =
            d->label() + ": its performance controls are in PCC subspace " +
            std::to_string(c.pccSubspace.value_or(0));
        if (!evidence.any())
        {
            throw std::system_error(
                make_error_code(Errc::pccUnavailable),
                where + "; direct access writes SystemMemory registers only "
                        "and drives no PCC channel: use the kernel backend");
        }
        const std::string found = quotedPaths(evidence.paths);
        std::string message = where;
        message += ", and the kernel drives PCC (";
        message += found;
        message += " exist): use the kernel backend";
        throw std::system_error(make_error_code(Errc::pccOwnedByKernel),
                                message);
    }
}

KernelCppcDriverEvidence probeKernelCppcDriver(
    const std::filesystem::path& root)
{
    KernelCppcDriverEvidence e;
    std::error_code ec;
    const std::filesystem::path policies =
        root / "sys/devices/system/cpu/cpufreq";
    std::vector<std::filesystem::path> drivers;
    for (const auto& entry : std::filesystem::directory_iterator(policies, ec))
    {
        if (entry.path().filename().string().rfind("policy", 0) == 0)
        {
            drivers.push_back(entry.path() / "scaling_driver");
        }
    }
    std::sort(drivers.begin(), drivers.end());
    for (const std::filesystem::path& driver : drivers)
    {
        try
        {
            if (readAttributeIfExists(driver) == "cppc_cpufreq")
            {
                e.paths.push_back(driver.string());
            }
        }
        catch (const std::system_error&)
        {
            // Unreadable (an inactive policy answers EBUSY): the module
            // directory below says whether the driver is there.
        }
    }
    const std::filesystem::path module = root / "sys/module/cppc_cpufreq";
    if (std::filesystem::exists(module, ec))
    {
        e.paths.push_back(module.string());
    }
    return e;
}

void refuseWhileKernelDrivesCppc(const KernelCppcDriverEvidence& evidence)
{
    if (!evidence.any())
    {
        return;
    }
    const std::string found = quotedPaths(evidence.paths);
    throw std::system_error(
        make_error_code(Errc::cppcDriverLoaded),
        "the kernel's cppc_cpufreq writes the same Desired registers (" +
            found +
            "): unload it (modprobe -r cppc_cpufreq) before writing "
            "them directly, or use the kernel backend");
}

} // namespace cppc::backend
