// SPDX-License-Identifier: Apache-2.0
// The fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on
// each file named on the command line (a directory stands for the files
// in it), as a libFuzzer binary does when it is given files. It builds
// with any compiler, so the seeds are checked on every build and under
// emulation on other architectures. A failed check traps, as in the
// fuzzer; an unreadable input is an error; no input at all is one too, so
// a seed set that went missing cannot pass.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size);

namespace
{

// Appends `path`, or the regular files in it when it is a directory, in
// name order (so a run is repeatable).
bool collect(const std::filesystem::path& path,
             std::vector<std::filesystem::path>& inputs)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec))
    {
        inputs.push_back(path);
        return true;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    {
        if (entry.is_regular_file(ec))
        {
            found.push_back(entry.path());
        }
    }
    if (ec)
    {
        std::cerr << "cannot list " << path << ": " << ec.message() << "\n";
        return false;
    }
    std::sort(found.begin(), found.end());
    inputs.insert(inputs.end(), found.begin(), found.end());
    return true;
}

bool readAll(const std::filesystem::path& path,
             std::vector<std::uint8_t>& bytes)
{
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in)
    {
        return false;
    }
    bytes.resize(size);
    in.read(reinterpret_cast<char*>(bytes.data()),
            static_cast<std::streamsize>(size));
    return in.gcount() == static_cast<std::streamsize>(size);
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::filesystem::path> inputs;
    for (int i = 1; i < argc; ++i)
    {
        if (!collect(argv[i], inputs))
        {
            return 1;
        }
    }
    if (inputs.empty())
    {
        std::cerr << "usage: " << (argc > 0 ? argv[0] : "replay")
                  << " FILE|DIR...: no inputs\n";
        return 2;
    }
    std::vector<std::uint8_t> bytes;
    for (const auto& path : inputs)
    {
        if (!readAll(path, bytes))
        {
            std::cerr << "cannot read " << path << "\n";
            return 1;
        }
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    std::cout << inputs.size() << " inputs ran\n";
    return 0;
}
