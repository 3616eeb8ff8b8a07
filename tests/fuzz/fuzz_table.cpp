// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the table header and checksum on raw bytes, then the
// MADT or PCCT reader when the signature says so.
#include "lib/acpi/madt.hpp"
#include "lib/acpi/pcct.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppc::acpi;
    try
    {
        const Table table = parseTable({data, size}, "fuzz");
        fuzz::require(table.bytes.size() == table.header.length &&
                      table.header.length >= tableHeaderSize &&
                      table.header.length <= size);
        if (table.header.signature == "APIC")
        {
            (void)logicalCpuUids(parseMadt(table));
        }
        else if (table.header.signature == "PCCT")
        {
            (void)parsePcct(table);
        }
    }
    catch (const AcpiError& e)
    {
        fuzz::checkError(e, size);
    }
    return 0;
}
