// SPDX-License-Identifier: Apache-2.0
// A temporary directory for tests that need files: fake sysfs trees, a
// plain file standing in for /dev/mem. Removed with everything in it.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

namespace cppc::test
{

class TempTree
{
  public:
    TempTree()
    {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "cppcgov-test-XXXXXX")
                .string();
        if (::mkdtemp(pattern.data()) == nullptr)
        {
            throw std::system_error(errno, std::system_category(), pattern);
        }
        path_ = pattern;
    }

    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    ~TempTree()
    {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }

    const std::filesystem::path& path() const
    {
        return path_;
    }

    // Creates or replaces the file at `relative`, making its directories;
    // returns the file's full path.
    std::filesystem::path write(const std::filesystem::path& relative,
                                std::string_view content) const
    {
        std::filesystem::path file = path_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        if (!out.flush())
        {
            throw std::runtime_error("cannot write " + file.string());
        }
        return file;
    }

    std::string read(const std::filesystem::path& relative) const
    {
        std::ifstream in(path_ / relative, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

    bool exists(const std::filesystem::path& relative) const
    {
        return std::filesystem::exists(path_ / relative);
    }

    void symlink(const std::filesystem::path& relative,
                 const std::filesystem::path& target) const
    {
        const std::filesystem::path link = path_ / relative;
        std::filesystem::create_directories(link.parent_path());
        std::filesystem::create_directory_symlink(target, link);
    }

    // Everything under `relative`, keyed by path: a file's content, a
    // symlink's target, or "dir".
    std::map<std::string, std::string> snapshot(
        const std::filesystem::path& relative = {}) const
    {
        std::map<std::string, std::string> out;
        const std::filesystem::path top = path_ / relative;
        for (const auto& e : std::filesystem::recursive_directory_iterator(top))
        {
            const std::string key =
                std::filesystem::relative(e.path(), top).string();
            if (e.is_symlink())
            {
                out[key] = "symlink " +
                           std::filesystem::read_symlink(e.path()).string();
            }
            else if (e.is_directory())
            {
                out[key] = "dir";
            }
            else
            {
                out[key] = "file " + read(relative / key);
            }
        }
        return out;
    }

  private:
    std::filesystem::path path_;
};

} // namespace cppc::test
