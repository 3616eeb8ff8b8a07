// SPDX-License-Identifier: Apache-2.0
// The few UEFI types (UEFI 2.10) the boot application uses, declared from
// the specification for AArch64, where the calling convention is the
// platform's own. Only the members it calls are typed; the rest are
// placeholders that keep the tables' layout.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cppcgov::efi
{

using Status = std::uint64_t;
using Handle = void*;

inline constexpr Status success = 0;
inline constexpr Status errorBit = 1ULL << 63;
inline constexpr Status bufferTooSmall = errorBit | 5;

struct Guid
{
    std::uint32_t data1;
    std::uint16_t data2;
    std::uint16_t data3;
    std::uint8_t data4[8];
};

// 5b1b31a1-9562-11d2-8e3f-00a0c969723b
inline constexpr Guid loadedImageGuid{
    0x5b1b31a1,
    0x9562,
    0x11d2,
    {0x8e, 0x3f, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}};
// 964e5b22-6459-11d2-8e39-00a0c969723b
inline constexpr Guid simpleFileSystemGuid{
    0x964e5b22,
    0x6459,
    0x11d2,
    {0x8e, 0x39, 0x00, 0xa0, 0xc9, 0x69, 0x72, 0x3b}};
// ffe06bdd-6107-46a6-7bb2-5a9c7ec5275c
inline constexpr Guid acpiTableGuid{
    0xffe06bdd,
    0x6107,
    0x46a6,
    {0x7b, 0xb2, 0x5a, 0x9c, 0x7e, 0xc5, 0x27, 0x5c}};

struct TableHeader
{
    std::uint64_t signature;
    std::uint32_t revision;
    std::uint32_t headerSize;
    std::uint32_t crc32;
    std::uint32_t reserved;
};

struct TextOutput
{
    void* reset;
    Status (*outputString)(TextOutput*, const char16_t*);
};

enum class AllocateType : std::uint32_t
{
    anyPages,
    maxAddress,
    address,
};

enum class MemoryType : std::uint32_t
{
    reserved,
    loaderCode,
    loaderData,
};

struct BootServices
{
    TableHeader header;
    void* raiseTpl;
    void* restoreTpl;
    Status (*allocatePages)(AllocateType, MemoryType, std::uint64_t pages,
                            std::uint64_t* address);
    void* freePages;
    void* getMemoryMap;
    Status (*allocatePool)(MemoryType, std::uint64_t size, void** buffer);
    Status (*freePool)(void*);
    void* createEvent;
    void* setTimer;
    void* waitForEvent;
    void* signalEvent;
    void* closeEvent;
    void* checkEvent;
    void* installProtocolInterface;
    void* reinstallProtocolInterface;
    void* uninstallProtocolInterface;
    Status (*handleProtocol)(Handle, const Guid*, void**);
    void* reserved;
    void* registerProtocolNotify;
    void* locateHandle;
    void* locateDevicePath;
    void* installConfigurationTable;
    Status (*loadImage)(bool bootPolicy, Handle parent, void* devicePath,
                        void* source, std::uint64_t sourceSize, Handle* image);
    Status (*startImage)(Handle, std::uint64_t* exitDataSize,
                         char16_t** exitData);
    void* exit;
    void* unloadImage;
    void* exitBootServices;
    void* getNextMonotonicCount;
    Status (*stall)(std::uint64_t microseconds);
    void* setWatchdogTimer;
    void* connectController;
    void* disconnectController;
    void* openProtocol;
    void* closeProtocol;
    void* openProtocolInformation;
    void* protocolsPerHandle;
    void* locateHandleBuffer;
    Status (*locateProtocol)(const Guid*, void* registration, void** iface);
};

struct SystemTable
{
    TableHeader header;
    char16_t* firmwareVendor;
    std::uint32_t firmwareRevision;
    Handle consoleInHandle;
    void* conIn;
    Handle consoleOutHandle;
    TextOutput* conOut;
    Handle standardErrorHandle;
    TextOutput* stdErr;
    void* runtimeServices;
    BootServices* bootServices;
    std::uint64_t tableEntries;
    void* configurationTable;
};

struct LoadedImage
{
    std::uint32_t revision;
    Handle parentHandle;
    SystemTable* systemTable;
    Handle deviceHandle;
    void* filePath;
    void* reserved;
    std::uint32_t loadOptionsSize;
    void* loadOptions;
    void* imageBase;
    std::uint64_t imageSize;
    MemoryType imageCodeType;
    MemoryType imageDataType;
    void* unload;
};

inline constexpr std::uint64_t fileModeRead = 1;
inline constexpr std::uint64_t fileDirectory = 0x10;

struct File
{
    std::uint64_t revision;
    Status (*open)(File*, File** opened, const char16_t* name,
                   std::uint64_t mode, std::uint64_t attributes);
    Status (*close)(File*);
    void* remove;
    Status (*read)(File*, std::uint64_t* size, void* buffer);
    void* write;
    void* getPosition;
    Status (*setPosition)(File*, std::uint64_t position);
};

// What reading a directory yields, one entry per read.
struct FileInfo
{
    std::uint64_t size; // of this structure, with the name
    std::uint64_t fileSize;
    std::uint64_t physicalSize;
    std::uint8_t times[3][16];
    std::uint64_t attribute;
    char16_t fileName[1];
};

struct SimpleFileSystem
{
    std::uint64_t revision;
    Status (*openVolume)(SimpleFileSystem*, File** root);
};

struct AcpiTableProtocol
{
    Status (*installAcpiTable)(AcpiTableProtocol*, const void* table,
                               std::uint64_t size, std::uint64_t* key);
    void* uninstallAcpiTable;
};

} // namespace cppcgov::efi
