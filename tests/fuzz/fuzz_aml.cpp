// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the AML reader and everything built on it (processor
// discovery, static evaluation, _CPC/_PSD conversion and the access plan),
// behind a valid DSDT header.
#include "lib/access_plan.hpp"
#include "lib/acpi/aml.hpp"
#include "lib/acpi/firmware.hpp"
#include "lib/acpi/processors.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size)
{
    using namespace cppc::acpi;
    const std::vector<std::uint8_t> bytes = fuzz::asTable(data, size, "DSDT");
    try
    {
        const Table table = parseTable(bytes, "fuzz");
        Namespace ns;
        ns.load(table);
        for (const ProcessorDevice& d : findProcessors(ns))
        {
            fuzz::require(!formatEvaluation(d.cpc).empty());
        }
        const FirmwareReport report = readFirmware({table});
        const cppc::AccessPlan plan =
            cppc::AccessPlan::build(report.descriptors());
        fuzz::require(plan.cpuCount() <= report.cpus.size());
    }
    catch (const AcpiError& e)
    {
        fuzz::checkError(e, bytes.size());
    }
    return 0;
}
