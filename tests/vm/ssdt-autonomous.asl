// SPDX-License-Identifier: Apache-2.0
/*
 * The autonomous layout of the VM suite (2 CPUs): the per-CPU layout's
 * capabilities and _PSD (ssdt-percpu.asl: CPU0 Orion O6-like, CPU1 a
 * smaller core, a policy per CPU), with every optional control of a
 * revision 3 _CPC present as a register, for the cppc_cpufreq of kernels
 * that expose auto_select, auto_act_window,
 * energy_performance_preference_val and perf_limited (Linux 6.16 and
 * later).
 *
 * Registers, in SystemMemory above the guest kernel's RAM (the guest boots
 * with mem=1024M of 2048M), one 4 KiB block per CPU at
 * 0x90000000 + n * 0x1000, each 32 bits wide unless given:
 *   +0x00 Desired Performance
 *   +0x08 Reference Performance Counter   64-bit
 *   +0x10 Delivered Performance Counter   64-bit
 *   +0x18 Minimum Performance
 *   +0x1C Maximum Performance
 *   +0x20 Performance Limited (bit 0 desired excursion, bit 1 minimum
 *         excursion; sticky, cleared by the OS)
 *   +0x24 Autonomous Selection Enable (bit 0)
 *   +0x28 Autonomous Activity Window (7-bit significand, 3-bit exponent)
 *   +0x2C Energy Performance Preference (0 performance .. 255 energy)
 * Nothing behind them acts: they are memory the guest and the host read
 * and write, so what the kernel wrote is what the host reads. The
 * counters must read non-zero before cppc_cpufreq loads, and the guest
 * gives the controls their power-on values first (vm_rig.py).
 */
DefinitionBlock ("", "SSDT", 2, "CPPCGV", "VMAUTO", 0x00000001)
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
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090000018, 0x03) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x000000009000001C, 0x03) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090000008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090000010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090000020, 0x03) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090000024, 0x03) },  // 17: Autonomous Selection Enable Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090000028, 0x03) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x000000009000002C, 0x03) },  // 19: Energy Performance Preference Register
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
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090001018, 0x03) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x000000009000101C, 0x03) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090001008, 0x04) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x40, 0x00, 0x0000000090001010, 0x04) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090001020, 0x03) },  // 15: Performance Limited Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 16: CPPC Enable Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090001024, 0x03) },  // 17: Autonomous Selection Enable Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x0000000090001028, 0x03) },  // 18: Autonomous Activity Window Register
            ResourceTemplate () { Register (SystemMemory, 0x20, 0x00, 0x000000009000102C, 0x03) },  // 19: Energy Performance Preference Register
            0x3E8,  // 20: Reference Performance
            0x320,  // 21: Lowest Frequency (MHz)
            0x709   // 22: Nominal Frequency (MHz)
        })
        Name (_PSD, Package (0x01) { Package (0x05) { 0x05, 0x00, 0x01, 0xFE, 0x01 } })
    }
}
