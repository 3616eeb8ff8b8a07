// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the MADT reader, behind a valid table header.
#include "lib/acpi/madt.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppc::acpi;
    const std::vector<std::uint8_t> bytes = fuzz::asTable(data, size, "APIC");
    try
    {
        const Table table = parseTable(bytes, "fuzz");
        const Madt madt = parseMadt(table);
        std::size_t enabled = 0;
        for (const GiccEntry& g : madt.gicc)
        {
            fuzz::require(g.length >= giccMinLength &&
                          g.offset + g.length <= table.bytes.size());
            enabled += g.enabled() ? 1 : 0;
        }
        fuzz::require(logicalCpuUids(madt).size() == enabled);
    }
    catch (const AcpiError& e)
    {
        fuzz::checkError(e, bytes.size());
    }
    return 0;
}
