// SPDX-License-Identifier: Apache-2.0
#include "error.hpp"

#include <string>

namespace cppc
{
namespace
{

class Category final : public std::error_category
{
  public:
    const char* name() const noexcept override
    {
        return "cppc";
    }

    std::string message(int value) const override
    {
        switch (static_cast<Errc>(value))
        {
            case Errc::ok:
                return "success";
            case Errc::noSuchCpu:
                return "no such CPU in the access plan";
            case Errc::cpuRefused:
                return "the CPU's _CPC was refused";
            case Errc::notWritable:
                return "the register is not writable";
            case Errc::valueOutOfRange:
                return "value does not fit the register field";
            case Errc::pccUnavailable:
                return "the CPU is controlled through PCC and no channel is "
                       "attached";
            case Errc::pccFailed:
                return "the PCC channel reported an error";
            case Errc::malformedAttribute:
                return "the file does not hold what was expected";
            case Errc::governorUnavailable:
                return "cpufreq does not offer the userspace governor";
            case Errc::pccOwnedByKernel:
                return "the kernel drives this PCC subspace; direct access "
                       "refused";
            case Errc::backendStopped:
                return "the backend has restored the saved state and "
                       "stopped";
            case Errc::pccTimeout:
                return "the PCC platform did not complete the command in "
                       "time";
            case Errc::pccPlatformError:
                return "the PCC platform reported an error for the command";
            case Errc::pccRateLimited:
                return "the PCC subspace's maximum periodic access rate is "
                       "reached";
            case Errc::pccBadRegister:
                return "the PCC register is malformed or outside the "
                       "subspace's payload";
            case Errc::cppcDriverLoaded:
                return "the kernel's cppc_cpufreq drives these registers; "
                       "direct access refused";
            case Errc::accessTimedOut:
                return "the access has not returned within its deadline";
            case Errc::accessPending:
                return "an earlier access to it has not returned";
            case Errc::registerMoved:
                return "the firmware no longer describes the register with "
                       "the address and field it had";
        }
        return "unknown cppc error " + std::to_string(value);
    }
};

} // namespace

const std::error_category& errorCategory() noexcept
{
    static const Category category;
    return category;
}

} // namespace cppc
