// SPDX-License-Identifier: Apache-2.0
// ConfigError: why a configuration file was rejected, with the file, the
// place in it and the key. Thrown by the YAML reader (yaml_reader.hpp) and
// the schema (config.hpp); what the daemon logs or returns on a bad file.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cppcgov::daemon
{

// what() is
//   '<file>':<line>:<column>: <key path>: <what is wrong>
// with line and column 1-based. The key path is dotted, with 0-based list
// indexes: `schedutil.headroom`, `overrides[2].cpus`. Parts that do not
// apply are left out: the position for an error about a whole file (it
// cannot be read, or is not a regular file), the key path for YAML syntax
// errors and for the nesting limit.
class ConfigError : public std::runtime_error
{
  public:
    ConfigError(std::string file, std::uint32_t line, std::uint32_t column,
                std::string keyPath, std::string problem);

    // The file as it was named to parseConfig() or loadConfig().
    const std::string& file() const noexcept;
    // 1-based; 0 when the error is about the file as a whole.
    std::uint32_t line() const noexcept;
    std::uint32_t column() const noexcept;
    // Empty when the error is not about one key.
    const std::string& keyPath() const noexcept;
    // What is wrong, without the file, position and key path.
    const std::string& problem() const noexcept;

  private:
    struct Details
    {
        std::string file;
        std::uint32_t line;
        std::uint32_t column;
        std::string keyPath;
        std::string problem;
    };
    // Shared so that copying the exception cannot throw.
    std::shared_ptr<const Details> details_;
};

// Throws the first of `errors`; nothing when there are none. How the
// functions that stop at the first error are made from those that
// collect them all.
void throwFirst(const std::vector<ConfigError>& errors);

} // namespace cppcgov::daemon
