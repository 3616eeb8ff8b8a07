// SPDX-License-Identifier: Apache-2.0
/*
 * The shared-domain layout of the VM suite (4 CPUs): a static Name (_CPC)
 * revision 3 with 23 entries in Scope (\_SB.C00n), the processor devices
 * QEMU's DSDT declares, and two _PSD domains of two CPUs each, SW_ANY
 * (0xFD): domain 0 is CPU0 and CPU1, domain 1 CPU2 and CPU3. Linux makes one
 * cpufreq policy per domain and writes only its policy CPU's Desired
 * register.
 *
 * Registers, in SystemMemory above the guest kernel's RAM (the guest boots
 * with mem=1024M of 2048M), one 4 KiB block per CPU at 0x90000000 +
 * n * 0x1000:
 *   +0x00 Desired Performance  Register (SystemMemory, 32, 0, addr, DWord)
 *   +0x08 Reference Performance Counter  64-bit
 *   +0x10 Delivered Performance Counter  64-bit
 * The counters must read non-zero before cppc_cpufreq loads: the guest
 * writes them first. Every other register is NULL (absent).
 *
 * Capabilities (Integers), the same for every CPU: Highest 1023, Nominal
 * 875, Lowest Nonlinear 301, Lowest 123, Reference Performance 875,
 * Lowest/Nominal Frequency 1000/2900 MHz (not a whole number of kHz per
 * level: the conversions truncate).
 */
DefinitionBlock ("", "SSDT", 2, "CPPCGV", "VMSWANY", 0x00000001)
{
    External (\_SB.C000, DeviceObj)
    External (\_SB.C001, DeviceObj)
    External (\_SB.C002, DeviceObj)
    External (\_SB.C003, DeviceObj)

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
            0x3FF,  // 2: Highest Performance
            0x36B,  // 3: Nominal Performance
            0x12D,  // 4: Lowest Nonlinear Performance
            0x7B,  // 5: Lowest Performance
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
            0x36B,  // 20: Reference Performance
            0x3E8,  // 21: Lowest Frequency (MHz)
            0xB54   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x00, 0xFD, 0x02 } })
    }

    Scope (\_SB.C001)
    {
        Name (_CPC, Package (0x17)
        {
            0x17,  // 0: NumEntries
            0x03,  // 1: Revision
            0x3FF,  // 2: Highest Performance
            0x36B,  // 3: Nominal Performance
            0x12D,  // 4: Lowest Nonlinear Performance
            0x7B,  // 5: Lowest Performance
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
            0x36B,  // 20: Reference Performance
            0x3E8,  // 21: Lowest Frequency (MHz)
            0xB54   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x00, 0xFD, 0x02 } })
    }

    Scope (\_SB.C002)
    {
        Name (_CPC, Package (0x17)
        {
            0x17,  // 0: NumEntries
            0x03,  // 1: Revision
            0x3FF,  // 2: Highest Performance
            0x36B,  // 3: Nominal Performance
            0x12D,  // 4: Lowest Nonlinear Performance
            0x7B,  // 5: Lowest Performance
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 6: Guaranteed Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090002000, 0x03) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090002008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090002010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            0x00,  // 17: Autonomous Selection Enable
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 19: Energy Performance Preference Register
            0x36B,  // 20: Reference Performance
            0x3E8,  // 21: Lowest Frequency (MHz)
            0xB54   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x01, 0xFD, 0x02 } })
    }

    Scope (\_SB.C003)
    {
        Name (_CPC, Package (0x17)
        {
            0x17,  // 0: NumEntries
            0x03,  // 1: Revision
            0x3FF,  // 2: Highest Performance
            0x36B,  // 3: Nominal Performance
            0x12D,  // 4: Lowest Nonlinear Performance
            0x7B,  // 5: Lowest Performance
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 6: Guaranteed Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090003000, 0x03) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090003008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090003010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            0x00,  // 17: Autonomous Selection Enable
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 19: Energy Performance Preference Register
            0x36B,  // 20: Reference Performance
            0x3E8,  // 21: Lowest Frequency (MHz)
            0xB54   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x01, 0xFD, 0x02 } })
    }
}
