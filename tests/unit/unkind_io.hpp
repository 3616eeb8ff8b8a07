// SPDX-License-Identifier: Apache-2.0
// An AttributeIo standing in for the kernel where a plain file in a test
// tree cannot refuse, and root (whom the tests run as) cannot get round:
//
//   - A cpufreq policy whose CPUs are all offline is inactive: the kernel's
//     show() and store() (drivers/cpufreq/cpufreq.c) answer -EBUSY for
//     every attribute of an inactive policy, reads and writes alike, while
//     the policy's directory and files stay. So here every read and every
//     write of a file in an offline policy's directory answers EBUSY, and
//     the file keeps what it held. When the CPUs come back the files
//     answer again, holding what they held before (the kernel brings the
//     policy back with its last governor and limits, not the original
//     ones).
//   - A file made read-only answers EACCES to every write (reads work), as
//     an attribute without write permission does to a process that may not
//     override it; the file keeps what it held.
//
// Everything else goes to the real files.
#pragma once

#include "lib/backend/attribute_io.hpp"

#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <system_error>

namespace cppc::test
{

class UnkindIo final : public backend::AttributeIo
{
  public:
    // Every CPU of the policy whose directory is `dir` goes offline, or
    // comes back.
    void offline(const std::filesystem::path& dir)
    {
        offline_.insert(dir.lexically_normal());
    }
    void online(const std::filesystem::path& dir)
    {
        offline_.erase(dir.lexically_normal());
    }
    // `file` refuses writes, or takes them again.
    void readOnly(const std::filesystem::path& file)
    {
        readOnly_.insert(file.lexically_normal());
    }
    void writable(const std::filesystem::path& file)
    {
        readOnly_.erase(file.lexically_normal());
    }

    std::error_code read(const std::filesystem::path& file,
                         std::string& out) const override
    {
        if (inOfflinePolicy(file))
        {
            return {EBUSY, std::system_category()};
        }
        return AttributeIo::read(file, out);
    }

    std::error_code write(const std::filesystem::path& file,
                          std::string_view value) const noexcept override
    {
        if (inOfflinePolicy(file))
        {
            return {EBUSY, std::system_category()};
        }
        try
        {
            if (readOnly_.contains(file.lexically_normal()))
            {
                return {EACCES, std::system_category()};
            }
        }
        catch (...)
        {
            return {ENOMEM, std::system_category()};
        }
        return AttributeIo::write(file, value);
    }

  private:
    bool inOfflinePolicy(const std::filesystem::path& file) const noexcept
    {
        try
        {
            return offline_.contains(file.lexically_normal().parent_path());
        }
        catch (...)
        {
            return false;
        }
    }

    std::set<std::filesystem::path> offline_;
    std::set<std::filesystem::path> readOnly_;
};

} // namespace cppc::test
