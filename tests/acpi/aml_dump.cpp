// SPDX-License-Identifier: Apache-2.0
// The project's side of the cross-check with ACPICA's acpiexec: loads the
// given tables with libcppc-acpi's AML reader and prints every processor
// device's _UID, _CPC and _PSD in the line format acpiexec_eval.py
// documents (its --discover form: "device" lines sorted by path, then three
// object lines per device in the same order).
#include "lib/acpi/processors.hpp"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>

int main(int argc, char** argv)
{
    using namespace cppc::acpi;
    try
    {
        std::vector<Table> tables;
        for (int i = 1; i < argc; ++i)
        {
            tables.push_back(loadTableFile(argv[i]));
        }
        // The DSDT loads first, then the SSDTs in the order given.
        std::stable_sort(tables.begin(), tables.end(),
                         [](const Table& a, const Table& b) {
            return a.header.signature == "DSDT" && b.header.signature != "DSDT";
        });
        Namespace ns;
        for (const Table& t : tables)
        {
            const std::string& sig = t.header.signature;
            if (sig == "DSDT" || sig == "SSDT")
            {
                ns.load(t);
            }
        }
        std::vector<ProcessorDevice> devices = findProcessors(ns);
        std::sort(devices.begin(), devices.end(),
                  [](const ProcessorDevice& a, const ProcessorDevice& b) {
            return a.path < b.path;
        });
        for (const ProcessorDevice& d : devices)
        {
            std::cout << "device " << d.path << "\n";
        }
        for (const ProcessorDevice& d : devices)
        {
            std::cout << d.path << "._UID = " << formatEvaluation(d.uidObject)
                      << "\n"
                      << d.path << "._CPC = " << formatEvaluation(d.cpc) << "\n"
                      << d.path << "._PSD = " << formatEvaluation(d.psd)
                      << "\n";
        }
        return 0;
    }
    catch (const std::exception& e)
    {
        std::cerr << "aml_dump: " << e.what() << "\n";
        return 1;
    }
}
