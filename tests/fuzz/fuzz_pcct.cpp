// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the PCCT reader, behind a valid table header.
#include "lib/acpi/pcct.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppc::acpi;
    const std::vector<std::uint8_t> bytes = fuzz::asTable(data, size, "PCCT");
    try
    {
        const Table table = parseTable(bytes, "fuzz");
        const Pcct pcct = parsePcct(table);
        fuzz::require(pcct.subspaces.size() <= maxPccSubspaces);
        for (std::size_t i = 0; i < pcct.subspaces.size(); ++i)
        {
            const PccSubspace& s = pcct.subspaces[i];
            fuzz::require(s.id == i &&
                          s.offset + s.length <= table.bytes.size());
            fuzz::require(!s.knownType ||
                          s.length == pccSubspaceLengths.at(s.type));
        }
    }
    catch (const AcpiError& e)
    {
        fuzz::checkError(e, bytes.size());
    }
    return 0;
}
