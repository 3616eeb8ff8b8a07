// Writes the seed corpus of fuzz_procfs into a directory: /proc/stat texts
// and task stat lines as the kernel prints them, and a few malformed ones.
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>

namespace
{

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> seeds{{
    {"stat-2cpus", "cpu  100 2 30 4000 5 0 1 0 0 0\n"
                   "cpu0 50 1 15 2000 2 0 1 0 0 0\n"
                   "cpu1 50 1 15 2000 3 0 0 0 0 0\n"
                   "intr 12345 0 0\n"
                   "ctxt 999\n"},
    {"stat-offline", "cpu  10 0 0 10 0 0 0 0\n"
                     "cpu0 5 0 0 5 0 0 0 0\n"
                     "cpu3 5 0 0 5 0 0 0 0\n"},
    {"stat-short", "cpu  1 2 3\ncpu0 1 2 3\n"},
    {"task-stat",
     "4242 (busy loop) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 13 0 0 20 0 "
     "1 0 123456 10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 "
     "17 1 0 0 0 0 0\n"},
    {"task-stat-parens",
     "7 (x) S 1 (y) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 99 0 0 0 0 0 0 0 "
     "0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"},
    {"garbage", "cpu0 x y z\n)()( R\n"},
}};

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: fuzz_procfs_seeds DIR\n";
        return 2;
    }
    for (const auto& [name, text] : seeds)
    {
        std::ofstream out(std::filesystem::path(argv[1]) / name,
                          std::ios::binary);
        out << text;
        if (!out)
        {
            std::cerr << "fuzz_procfs_seeds: cannot write '" << name << "'\n";
            return 1;
        }
    }
    return 0;
}
