// SPDX-License-Identifier: Apache-2.0
// Shared by the seed writers of the fuzz targets that read text
// (fuzz_config_seeds, fuzz_procfs_seeds, fuzz_cpu_list_seeds,
// fuzz_state_seeds): each one is a table of file names and texts, written
// into the directory its command line names.
#pragma once

#include <filesystem>
#include <fstream>
#include <iostream>
#include <span>
#include <string_view>
#include <utility>

namespace cppcgov::fuzz
{

using Seed = std::pair<std::string_view, std::string_view>;

// main() of a seed writer called `program`: writes each seed's text into
// DIR/<its name>, DIR being the one argument. Returns main's exit status: 0,
// 1 when a file cannot be written, 2 for a wrong command line.
inline int writeSeeds(int argc, char** argv, std::string_view program,
                      std::span<const Seed> seeds)
{
    if (argc != 2)
    {
        std::cerr << "usage: " << program << " DIR\n";
        return 2;
    }
    for (const auto& [name, text] : seeds)
    {
        const std::filesystem::path path =
            std::filesystem::path(argv[1]) / name;
        std::ofstream out(path, std::ios::binary);
        out << text;
        if (!out.flush())
        {
            std::cerr << program << ": cannot write " << path << "\n";
            return 1;
        }
    }
    return 0;
}

} // namespace cppcgov::fuzz
