// SPDX-License-Identifier: Apache-2.0
#include "daemon/config_error.hpp"

#include <utility>

namespace cppcgov::daemon
{
namespace
{

std::string errorMessage(const std::string& file, std::uint32_t line,
                         std::uint32_t column, const std::string& keyPath,
                         const std::string& problem)
{
    std::string out = "'" + file + "'";
    if (line != 0)
    {
        out += ":" + std::to_string(line) + ":" + std::to_string(column);
    }
    out += ": ";
    if (!keyPath.empty())
    {
        out += keyPath + ": ";
    }
    return out + problem;
}

} // namespace

ConfigError::ConfigError(std::string file, std::uint32_t line,
                         std::uint32_t column, std::string keyPath,
                         std::string problem) :
    std::runtime_error(errorMessage(file, line, column, keyPath, problem)),
    details_(std::make_shared<const Details>(Details{
        std::move(file), line, column, std::move(keyPath), std::move(problem)}))
{}

const std::string& ConfigError::file() const noexcept
{
    return details_->file;
}

std::uint32_t ConfigError::line() const noexcept
{
    return details_->line;
}

std::uint32_t ConfigError::column() const noexcept
{
    return details_->column;
}

const std::string& ConfigError::keyPath() const noexcept
{
    return details_->keyPath;
}

const std::string& ConfigError::problem() const noexcept
{
    return details_->problem;
}

void throwFirst(const std::vector<ConfigError>& errors)
{
    if (!errors.empty())
    {
        throw errors.front();
    }
}

} // namespace cppcgov::daemon
