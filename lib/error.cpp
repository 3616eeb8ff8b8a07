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
