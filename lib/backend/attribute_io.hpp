// SPDX-License-Identifier: Apache-2.0
// The seam through which the kernel backend and the latency arbiter read
// and write sysfs attributes once they run: the real thing in production
// (readAttribute and writeAttribute of sysfs.hpp), and in tests a stand-in
// that answers as the kernel does where a plain file cannot (an inactive
// cpufreq policy's EBUSY, a file root may not write).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace cppc::backend
{

class AttributeIo
{
  public:
    AttributeIo() = default;
    AttributeIo(const AttributeIo&) = delete;
    AttributeIo& operator=(const AttributeIo&) = delete;
    virtual ~AttributeIo() = default;

    // readAttribute(): the contents with one trailing newline removed, into
    // `out`. Returns the errno of open or read, or
    // Errc::malformedAttribute for more than a page; `out` is then
    // unspecified.
    [[nodiscard]] virtual std::error_code read(
        const std::filesystem::path& file, std::string& out) const;

    // writeAttribute(): one write(2) of `value`, never creating the file.
    // Does not allocate.
    [[nodiscard]] virtual std::error_code write(
        const std::filesystem::path& file,
        std::string_view value) const noexcept;
};

// The real sysfs, as AttributeIo's own methods do it.
const AttributeIo& sysfsIo() noexcept;

} // namespace cppc::backend
