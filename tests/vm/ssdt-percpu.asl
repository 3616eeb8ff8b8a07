// SPDX-License-Identifier: Apache-2.0
/*
 * The per-CPU layout of the VM suite (2 CPUs), Orion O6-like: a static
 * Name (_CPC) revision 3 with 23 entries in Scope (\_SB.C00n), the processor
 * devices QEMU's DSDT declares, and a _PSD per CPU (domain n, HW_ALL 0xFE,
 * 1 processor): every CPU is a cpufreq policy of its own.
 *
 * Registers, in SystemMemory above the guest kernel's RAM (the guest boots
 * with mem=1024M of 2048M, so 0x90000000 is memory no driver claims), one
 * 4 KiB block per CPU at 0x90000000 + n * 0x1000:
 *   +0x00 Desired Performance  Register (SystemMemory, 32, 0, addr, DWord):
 *         full width, aligned, one word per CPU (as the Orion O6's Desired)
 *   +0x08 Reference Performance Counter  64-bit
 *   +0x10 Delivered Performance Counter  64-bit
 * The counters must read non-zero before cppc_cpufreq loads: the guest
 * writes them first. Every other register is NULL (absent).
 *
 * Capabilities (Integers), two CPU classes as on a big.LITTLE part:
 *   CPU0: Highest = Nominal 0x2000, Lowest Nonlinear = Lowest 0xA3D (the
 *         Orion O6's CPU0), Reference Performance 1000, Lowest/Nominal
 *         Frequency 800/2500 MHz.
 *   CPU1: Highest 0x2000, Nominal 0x1C00, Lowest Nonlinear 0xC00, Lowest
 *         0xA3D, Reference Performance 1000, 800/1801 MHz.
 * Neither frequency line is a whole number of kHz per level, so
 * cppc_cpufreq's conversions truncate.
 */
DefinitionBlock ("", "SSDT", 2, "CPPCGV", "VMPERCPU", 0x00000001)
{
    External (\_SB.C000, DeviceObj)
    External (\_SB.C001, DeviceObj)

    // The platform-wide _OSC: every capability the OS asks for under the
    // platform-wide UUID is granted (Arg3 comes back as it went, the error
    // bits clear); any other UUID is answered "unrecognized UUID". Linux
    // publishes acpi_cppc only when _OSC acknowledged CPPC (bits 5 and 6).
    Scope (\_SB)
    {
        Method (_OSC, 4, Serialized)
        {
            CreateDWordField (Arg3, 0x00, STS0)
            If ((Arg0 != ToUUID ("0811b06e-4a27-44f9-8d60-3cbbc22e7b48")))
            {
                STS0 |= 0x04
            }
            Return (Arg3)
        }
    }

    Scope (\_SB.C000)
    {
        Name (_CPC, Package (0x17)
        {
            0x17,  // 0: NumEntries
            0x03,  // 1: Revision
            0x2000,  // 2: Highest Performance
            0x2000,  // 3: Nominal Performance
            0xA3D,  // 4: Lowest Nonlinear Performance
            0xA3D,  // 5: Lowest Performance
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 6: Guaranteed Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090000000, 0x03) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090000008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090000010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            0x00,  // 17: Autonomous Selection Enable
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 19: Energy Performance Preference Register
            0x3E8,  // 20: Reference Performance
            0x320,  // 21: Lowest Frequency (MHz)
            0x9C4   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x00, 0xFE, 0x01 } })
    }

    Scope (\_SB.C001)
    {
        Name (_CPC, Package (0x17)
        {
            0x17,  // 0: NumEntries
            0x03,  // 1: Revision
            0x2000,  // 2: Highest Performance
            0x1C00,  // 3: Nominal Performance
            0xC00,  // 4: Lowest Nonlinear Performance
            0xA3D,  // 5: Lowest Performance
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 6: Guaranteed Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090001000, 0x03) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090001008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090001010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            0x00,  // 17: Autonomous Selection Enable
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 19: Energy Performance Preference Register
            0x3E8,  // 20: Reference Performance
            0x320,  // 21: Lowest Frequency (MHz)
            0x709   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x01, 0xFE, 0x01 } })
    }
}
