// SPDX-License-Identifier: Apache-2.0
/*
 * The two-socket PCC layout of the VM suite (2 CPUs): as ssdt-pcc.asl, but
 * each CPU is a socket of its own, with its own mailbox: CPU n in subspace
 * n, its block at 0. A mailbox that hangs then holds one CPU only.
 *
 * Registers, in the shared memory of a PCCT subspace (pcct-vm.asl): in
 * ASL Register (PCC, width, 0, offset, subspace id), the offset counted
 * from the payload, 8 bytes after the subspace's base (signature, command
 * and status first). A CPU's block of 0x80 bytes, as on the Altra:
 *   +0x14 Desired Performance               32-bit
 *   +0x20 Reference Performance Counter     64-bit
 *   +0x28 Delivered Performance Counter     64-bit
 *   +0x3C Performance Limited               32-bit (bit 0 desired
 *         excursion, bit 1 minimum excursion; sticky, cleared by the OS)
 * (the Altra's counters sit at +0x2C/+0x34, 4-byte aligned only; these are
 * 8-byte aligned, as arm64 Linux reads a 64-bit PCC register in one load).
 * Every other register is NULL or an Integer: the capabilities are those
 * of ssdt-percpu.asl (CPU0 Orion O6-like, CPU1 a smaller core), a _PSD
 * per CPU (a policy per CPU). Nothing reaches the registers but through
 * the subspace's doorbell: the OS writes Desired and rings for a write
 * command, rings for a read command and then reads the counters; the
 * platform (platform/cppc_platform) answers after its latency.
 */
DefinitionBlock ("", "SSDT", 2, "CPPCGV", "VMPCCSKT", 0x00000001)
{
    External (\_SB.C000, DeviceObj)
    External (\_SB.C001, DeviceObj)

    // The platform-wide _OSC: every capability the OS asks for under the
    // platform-wide UUID is granted (Arg3 comes back as it went, the error
    // bits clear); any other UUID is answered "unrecognized UUID".
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
            ResourceTemplate () { Register (PCC, 0x20, 0x00, 0x0000000000000014, 0x00) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (PCC, 0x40, 0x00, 0x0000000000000020, 0x00) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (PCC, 0x40, 0x00, 0x0000000000000028, 0x00) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (PCC, 0x20, 0x00, 0x000000000000003C, 0x00) },  // 15: Performance Limited Register
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
            ResourceTemplate () { Register (PCC, 0x20, 0x00, 0x0000000000000014, 0x01) },  // 7: Desired Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 8: Minimum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 9: Maximum Performance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 10: Performance Reduction Tolerance Register
            ResourceTemplate () { Register (SystemMemory, 0x00, 0x00, 0x0000000000000000, 0x00) },  // 11: Time Window Register
            0x00,  // 12: Counter Wraparound Time
            ResourceTemplate () { Register (PCC, 0x40, 0x00, 0x0000000000000020, 0x01) },  // 13: Reference Performance Counter Register
            ResourceTemplate () { Register (PCC, 0x40, 0x00, 0x0000000000000028, 0x01) },  // 14: Delivered Performance Counter Register
            ResourceTemplate () { Register (PCC, 0x20, 0x00, 0x000000000000003C, 0x01) },  // 15: Performance Limited Register
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
