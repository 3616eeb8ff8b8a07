// Writes small policy files into a directory, one file each, as the seed
// corpus of fuzz_config (beside the shipped config/policy.yaml): every
// knob, both kinds of override, flow style, anchors, and a few errors.
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>

namespace
{

constexpr std::array<std::pair<std::string_view, std::string_view>, 8> seeds{{
    {"knobs",
     "policy: performance\n"
     "schedutil:\n"
     "  headroom: 1.5\n"
     "  rate_limit_up_us: 500\n"
     "  rate_limit_down_us: 20000\n"
     "  floor: lowest\n"
     "  boost: true\n"
     "sampling:\n"
     "  period_us: 2000\n"
     "clients:\n"
     "  max_handles: 16\n"
     "  max_calls_per_second: 50\n"
     "permissions:\n"
     "  group: wheel\n"},
    {"overrides", "overrides:\n"
                  "  - cpus: \"0-3,8,10-11\"\n"
                  "    policy: powersave\n"
                  "  - domain: 2\n"
                  "    schedutil:\n"
                  "      headroom: 2.0\n"
                  "      boost: false\n"},
    {"flow", "{policy: schedutil, schedutil: {headroom: 1.25, floor: "
             "lowest_nonlinear}, overrides: [{cpus: '1', policy: "
             "performance}, {domain: 0}]}\n"},
    {"anchors", "overrides:\n"
                "  - &fast {cpus: \"4-7\", policy: performance}\n"
                "  - *fast\n"},
    {"documents", "---\npolicy: powersave\n...\n"},
    {"bad_type", "schedutil:\n  headroom: \"1.5\"\n"},
    {"bad_list", "overrides:\n  - cpus: \"3-1,,x\"\n    domain: 1\n"},
    {"nested", "overrides: [[[[{cpus: [[1]]}]]]]\n"},
}};

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2)
    {
        std::cerr << "usage: fuzz_config_seeds DIR\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    for (const auto& [name, text] : seeds)
    {
        const std::filesystem::path path =
            dir / ("seed-" + std::string(name) + ".yaml");
        std::ofstream out(path, std::ios::binary);
        out << text;
        if (!out.flush())
        {
            std::cerr << "fuzz_config_seeds: cannot write " << path << "\n";
            return 1;
        }
    }
    return 0;
}
