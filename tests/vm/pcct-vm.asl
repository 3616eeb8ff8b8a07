// SPDX-License-Identifier: Apache-2.0
/*
 * The PCCT of the VM suite's PCC layouts (ssdt-pcc.asl, ssdt-pcc-sockets.asl),
 * which efi/table_boot installs before the kernel starts: two type-2
 * subspaces in the Ampere Altra style (nominal command latency 100 us,
 * minimum request turnaround 110 us, no limit on the access rate, a 32-bit
 * SystemMemory doorbell with write mask 1 and a platform acknowledgement
 * register), polled (no platform interrupt). Each subspace is one 4 KiB page
 * of guest RAM above the kernel's (mem=1024M of 2048M), its doorbells on a
 * page of their own:
 *
 *   id 0  shared memory 0x90100000  doorbell 0x90200000  ack 0x90200004
 *   id 1  shared memory 0x90101000  doorbell 0x90200008  ack 0x9020000C
 *
 * The platform (platform/cppc_platform) answers them. Data-table source for
 * iasl's table compiler; every number is hexadecimal. iasl computes Table
 * Length and Checksum.
 */

[0004]                          Signature : "PCCT"    [Platform Communications Channel Table]
[0004]                       Table Length : 00000000
[0001]                           Revision : 02
[0001]                           Checksum : 00
[0006]                             Oem ID : "CPPCGV"
[0008]                       Oem Table ID : "VMPCC   "
[0004]                       Oem Revision : 00000001
[0004]                    Asl Compiler ID : "INTL"
[0004]              Asl Compiler Revision : 20200925

[0004]              Flags (decoded below) : 00000000
                                 Platform : 0
[0008]                           Reserved : 0000000000000000

/* Subspace 0: socket 0 */
[0001]                      Subtable Type : 02 [HW-Reduced Comm Subspace Type2]
[0001]                             Length : 5A

[0004]                 Platform Interrupt : 00000000
[0001]              Flags (Decoded Below) : 00
                                 Polarity : 0
                                     Mode : 0
[0001]                           Reserved : 00
[0008]                       Base Address : 0000000090100000
[0008]                     Address Length : 0000000000001000

[0012]                  Doorbell Register : [Generic Address Structure]
[0001]                           Space ID : 00 [SystemMemory]
[0001]                          Bit Width : 20
[0001]                         Bit Offset : 00
[0001]               Encoded Access Width : 03 [DWord Access:32]
[0008]                            Address : 0000000090200000

[0008]                      Preserve Mask : 0000000000000000
[0008]                         Write Mask : 0000000000000001
[0004]                    Command Latency : 00000064
[0004]                Maximum Access Rate : 00000000
[0002]            Minimum Turnaround Time : 006E
[0012]              Platform ACK Register : [Generic Address Structure]
[0001]                           Space ID : 00 [SystemMemory]
[0001]                          Bit Width : 20
[0001]                         Bit Offset : 00
[0001]               Encoded Access Width : 03 [DWord Access:32]
[0008]                            Address : 0000000090200004

[0008]                  ACK Preserve Mask : 00000000FFFFFFFE
[0008]                     ACK Write Mask : 0000000000000001

/* Subspace 1: socket 1 */
[0001]                      Subtable Type : 02 [HW-Reduced Comm Subspace Type2]
[0001]                             Length : 5A

[0004]                 Platform Interrupt : 00000000
[0001]              Flags (Decoded Below) : 00
                                 Polarity : 0
                                     Mode : 0
[0001]                           Reserved : 00
[0008]                       Base Address : 0000000090101000
[0008]                     Address Length : 0000000000001000

[0012]                  Doorbell Register : [Generic Address Structure]
[0001]                           Space ID : 00 [SystemMemory]
[0001]                          Bit Width : 20
[0001]                         Bit Offset : 00
[0001]               Encoded Access Width : 03 [DWord Access:32]
[0008]                            Address : 0000000090200008

[0008]                      Preserve Mask : 0000000000000000
[0008]                         Write Mask : 0000000000000001
[0004]                    Command Latency : 00000064
[0004]                Maximum Access Rate : 00000000
[0002]            Minimum Turnaround Time : 006E
[0012]              Platform ACK Register : [Generic Address Structure]
[0001]                           Space ID : 00 [SystemMemory]
[0001]                          Bit Width : 20
[0001]                         Bit Offset : 00
[0001]               Encoded Access Width : 03 [DWord Access:32]
[0008]                            Address : 000000009020000C

[0008]                  ACK Preserve Mask : 00000000FFFFFFFE
[0008]                     ACK Write Mask : 0000000000000001
