// SPDX-License-Identifier: Apache-2.0
// Writes the synthetic sample tables (acpi_samples.hpp) into a directory,
// one file per table, as the fuzzers' seed corpus.
#include "tests/fuzz/acpi_samples.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: fuzz_seeds DIR\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    for (const auto& [name, bytes] : cppc::acpi::samples::seedTables())
    {
        const std::filesystem::path path = dir / (name + ".dat");
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
        if (!out.flush())
        {
            std::cerr << "fuzz_seeds: cannot write " << path << "\n";
            return 1;
        }
    }
    return 0;
}
