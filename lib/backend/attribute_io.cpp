// SPDX-License-Identifier: Apache-2.0
#include "attribute_io.hpp"

#include "lib/backend/sysfs.hpp"

#include <new>

namespace cppc::backend
{

std::error_code AttributeIo::read(const std::filesystem::path& file,
                                  std::string& out) const
{
    try
    {
        out = readAttribute(file);
        return {};
    }
    catch (const std::system_error& e)
    {
        return e.code();
    }
}

std::error_code AttributeIo::write(const std::filesystem::path& file,
                                   std::string_view value) const noexcept
{
    return writeAttribute(file, value);
}

const AttributeIo& sysfsIo() noexcept
{
    static const AttributeIo io;
    return io;
}

} // namespace cppc::backend
