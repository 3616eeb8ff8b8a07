// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a CPU list (lib/cpu_list.hpp), in
// both syntaxes. Whatever parses must come back the same from its own
// printed form, in both syntaxes; a written list without spaces must mean
// the same in the kernel syntax and the other way round; an error must
// name no CPUs, point inside the text and describe itself in printable
// characters. A failed check traps, which libFuzzer reports.
#include "lib/cpu_list.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace
{

using cppc::acpi::fuzz::require;

void checkError(const cppc::CpuListResult& r, std::string_view text)
{
    require(r.cpus.none());
    require(r.error.offset <= text.size());
    require(r.error.length <= text.size() - r.error.offset);
    for (const char c : cppc::describe(r.error, text))
    {
        require(c >= 0x20 && c < 0x7f);
    }
}

// The list printed from `cpus` parses back to them in both syntaxes (the
// written one has no empty list).
void checkRoundTrip(const cppc::CpuSet& cpus)
{
    const std::string printed = cppc::formatCpuList(cpus);
    for (const auto syntax :
         {cppc::CpuListSyntax::written, cppc::CpuListSyntax::kernel})
    {
        if (cpus.none() && syntax == cppc::CpuListSyntax::written)
        {
            continue;
        }
        const cppc::CpuListResult again = cppc::parseCpuList(printed, syntax);
        require(!again.error);
        require(again.cpus == cpus);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const cppc::CpuListResult written = cppc::parseCpuList(text);
    const cppc::CpuListResult kernel =
        cppc::parseCpuList(text, cppc::CpuListSyntax::kernel);
    for (const cppc::CpuListResult* r : {&written, &kernel})
    {
        if (r->error)
        {
            checkError(*r, text);
        }
        else
        {
            checkRoundTrip(r->cpus);
        }
    }
    // Without spaces the two syntaxes are one, except for the empty text.
    if (!text.empty() && text.find(' ') == std::string_view::npos)
    {
        require(!written.error == !kernel.error);
        require(written.cpus == kernel.cpus);
    }
    return 0;
}
