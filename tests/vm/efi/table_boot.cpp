// SPDX-License-Identifier: Apache-2.0
// A UEFI application for the VM suite's PCC layouts: it gives the guest
// kernel firmware tables that QEMU's virt machine does not build, then
// starts the kernel, as firmware would.
//
// From the volume it was loaded from it reads every file of \tables (each
// one ACPI table, as iasl writes it) and installs it through the
// firmware's ACPI table protocol, so the kernel finds it in the XSDT as
// it finds QEMU's own tables (Linux takes a PCCT only from there: the
// initrd's table upgrade refuses the signature). For a PCCT it first
// claims, as reserved memory, every page a subspace names (shared memory,
// doorbell, platform acknowledgement): Linux on arm64 maps PCC's regions
// only where the firmware's memory map says they are not RAM. Then it
// loads \vmlinuz (an EFI-stub kernel) and starts it with the first line
// of \cmdline.txt as its command line, from the same volume, so that the
// stub's `initrd=` finds the initrd there.
//
// It prints what it did on the firmware's console; any failure is
// printed with its status and the application returns it (the firmware
// then goes on to its next boot option, and the test sees the message).
#include "tests/vm/efi/uefi.hpp"

#include <cstddef>
#include <cstdint>

namespace efi = cppcgov::efi;

// The compiler may call these for copies and clears of its own.
extern "C" void* memcpy(void* to, const void* from, std::size_t n)
{
    auto* t = static_cast<unsigned char*>(to);
    const auto* f = static_cast<const unsigned char*>(from);
    for (std::size_t i = 0; i < n; ++i)
    {
        t[i] = f[i];
    }
    return to;
}

extern "C" void* memset(void* to, int value, std::size_t n)
{
    auto* t = static_cast<unsigned char*>(to);
    for (std::size_t i = 0; i < n; ++i)
    {
        t[i] = static_cast<unsigned char>(value);
    }
    return to;
}

namespace
{

efi::SystemTable* systemTable = nullptr;

efi::BootServices& boot()
{
    return *systemTable->bootServices;
}

void say(const char* text)
{
    char16_t line[160];
    std::size_t n = 0;
    for (; *text != '\0' && n + 2 < sizeof line / sizeof line[0]; ++text)
    {
        if (*text == '\n')
        {
            line[n++] = u'\r';
        }
        line[n++] = static_cast<char16_t>(static_cast<unsigned char>(*text));
    }
    line[n] = u'\0';
    systemTable->conOut->outputString(systemTable->conOut, line);
}

void sayHex(std::uint64_t value)
{
    char text[19] = "0x";
    int digits = 1;
    while (digits < 16 && (value >> (4 * digits)) != 0)
    {
        ++digits;
    }
    for (int i = 0; i < digits; ++i)
    {
        const auto nibble = (value >> (4 * (digits - 1 - i))) & 0xF;
        text[2 + i] =
            static_cast<char>(nibble < 10 ? '0' + nibble : 'a' + nibble - 10);
    }
    text[2 + digits] = '\0';
    say(text);
}

void sayName(const char16_t* name)
{
    char text[64];
    std::size_t n = 0;
    for (; *name != u'\0' && n + 1 < sizeof text; ++name)
    {
        text[n++] = *name < 0x80 ? static_cast<char>(*name) : '?';
    }
    text[n] = '\0';
    say(text);
}

// Prints "table-boot: WHAT failed: STATUS" and returns the status.
efi::Status failed(const char* what, efi::Status status)
{
    say("table-boot: ");
    say(what);
    say(" failed: ");
    sayHex(status);
    say("\n");
    return status == efi::success ? efi::errorBit : status;
}

template <typename T>
std::uint64_t little(const std::uint8_t* at)
{
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
    {
        v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
    }
    return v;
}

// Reads the whole of an open file of `size` bytes into pool memory.
efi::Status readAll(efi::File* file, std::uint64_t size, std::uint8_t** data)
{
    void* buffer = nullptr;
    efi::Status s =
        boot().allocatePool(efi::MemoryType::loaderData, size + 1, &buffer);
    if (s != efi::success)
    {
        return s;
    }
    std::uint64_t done = 0;
    while (done < size)
    {
        std::uint64_t chunk = size - done;
        s = file->read(file, &chunk, static_cast<std::uint8_t*>(buffer) + done);
        if (s != efi::success)
        {
            return s;
        }
        if (chunk == 0)
        {
            return efi::errorBit | 1; // shorter than its directory entry
        }
        done += chunk;
    }
    *data = static_cast<std::uint8_t*>(buffer);
    return efi::success;
}

// Opens `name` under `dir` and reads it whole; its size comes from the
// directory's entry for it (`size`).
efi::Status readFile(efi::File* dir, const char16_t* name, std::uint64_t size,
                     std::uint8_t** data)
{
    efi::File* file = nullptr;
    efi::Status s = dir->open(dir, &file, name, efi::fileModeRead, 0);
    if (s != efi::success)
    {
        return s;
    }
    s = readAll(file, size, data);
    file->close(file);
    return s;
}

// Finds `name` among `dir`'s entries: its size, or false.
bool sizeOf(efi::File* dir, const char16_t* name, std::uint64_t* size)
{
    std::uint64_t entry[64]; // one directory entry, aligned as FileInfo
    if (dir->setPosition(dir, 0) != efi::success)
    {
        return false;
    }
    for (;;)
    {
        std::uint64_t n = sizeof entry;
        if (dir->read(dir, &n, entry) != efi::success || n == 0)
        {
            return false;
        }
        const auto* info = reinterpret_cast<const efi::FileInfo*>(entry);
        const char16_t* a = info->fileName;
        const char16_t* b = name;
        while (*a != u'\0' && (*a | 0x20) == (*b | 0x20))
        {
            ++a;
            ++b;
        }
        if (*a == u'\0' && *b == u'\0')
        {
            *size = info->fileSize;
            return true;
        }
    }
}

// The pages claimed so far: subspaces may share a page (their doorbells).
constexpr std::size_t maxReserved = 64;
std::uint64_t reservedPages[maxReserved];
std::size_t reservedCount = 0;

// Claims the pages of [address, address + length) as reserved memory,
// each once.
efi::Status reserve(std::uint64_t address, std::uint64_t length)
{
    constexpr std::uint64_t page = 4096;
    for (std::uint64_t at = address & ~(page - 1); at < address + length;
         at += page)
    {
        bool known = false;
        for (std::size_t i = 0; i < reservedCount; ++i)
        {
            known = known || reservedPages[i] == at;
        }
        if (known)
        {
            continue;
        }
        if (reservedCount == maxReserved)
        {
            return efi::errorBit | 9; // out of resources
        }
        std::uint64_t where = at;
        const efi::Status s = boot().allocatePages(
            efi::AllocateType::address, efi::MemoryType::reserved, 1, &where);
        if (s != efi::success)
        {
            say("table-boot: page ");
            sayHex(at);
            say(" is not free\n");
            return s;
        }
        reservedPages[reservedCount++] = at;
        say("table-boot: reserved ");
        sayHex(at);
        say("\n");
    }
    return efi::success;
}

// A Generic Address Structure at `at` in SystemMemory: its address, or 0.
std::uint64_t memoryRegister(const std::uint8_t* at)
{
    return at[0] == 0 ? little<std::uint64_t>(at + 4) : 0;
}

// Reserves what each subspace of the PCCT `table` names. Entries are
// stepped over by their own Length byte; types 0-2 share the layout up to
// the doorbell, and type 2 adds the platform acknowledgement register.
efi::Status reservePcct(const std::uint8_t* table, std::uint64_t size)
{
    constexpr std::uint64_t firstEntry = 48; // header 36, flags 4, reserved 8
    for (std::uint64_t at = firstEntry; at + 2 <= size;)
    {
        const std::uint8_t type = table[at];
        const std::uint8_t length = table[at + 1];
        if (length < 2 || at + length > size)
        {
            return efi::errorBit | 1;
        }
        if (type <= 2 && length >= 0x3E)
        {
            const std::uint8_t* e = table + at;
            // Base and length at 0x08 and 0x10; doorbell GAS at 0x18.
            efi::Status s = reserve(little<std::uint64_t>(e + 0x08),
                                    little<std::uint64_t>(e + 0x10));
            const std::uint64_t doorbell = memoryRegister(e + 0x18);
            if (s == efi::success && doorbell != 0)
            {
                s = reserve(doorbell, 8);
            }
            // A platform acknowledgement register (type 2) at 0x3E.
            const std::uint64_t ack =
                type == 2 && length >= 0x4A ? memoryRegister(e + 0x3E) : 0;
            if (s == efi::success && ack != 0)
            {
                s = reserve(ack, 8);
            }
            if (s != efi::success)
            {
                return s;
            }
        }
        at += length;
    }
    return efi::success;
}

efi::Status installTables(efi::File* root)
{
    efi::AcpiTableProtocol* acpi = nullptr;
    efi::Status s = boot().locateProtocol(&efi::acpiTableGuid, nullptr,
                                          reinterpret_cast<void**>(&acpi));
    if (s != efi::success)
    {
        return failed("the ACPI table protocol", s);
    }
    efi::File* dir = nullptr;
    s = root->open(root, &dir, u"\\tables", efi::fileModeRead, 0);
    if (s != efi::success)
    {
        return failed("opening \\tables", s);
    }
    std::uint64_t entry[64]; // one directory entry, aligned as FileInfo
    for (;;)
    {
        std::uint64_t n = sizeof entry;
        s = dir->read(dir, &n, entry);
        if (s != efi::success)
        {
            return failed("reading \\tables", s);
        }
        if (n == 0)
        {
            break;
        }
        const auto* info = reinterpret_cast<const efi::FileInfo*>(entry);
        if ((info->attribute & efi::fileDirectory) != 0)
        {
            continue;
        }
        std::uint8_t* table = nullptr;
        s = readFile(dir, info->fileName, info->fileSize, &table);
        if (s != efi::success)
        {
            return failed("reading a table", s);
        }
        if (info->fileSize < 36 ||
            little<std::uint32_t>(table + 4) != info->fileSize)
        {
            sayName(info->fileName);
            return failed(": not one ACPI table", efi::errorBit | 1);
        }
        if (table[0] == 'P' && table[1] == 'C' && table[2] == 'C' &&
            table[3] == 'T')
        {
            s = reservePcct(table, info->fileSize);
            if (s != efi::success)
            {
                return failed("reserving the PCCT's pages", s);
            }
        }
        std::uint64_t key = 0;
        s = acpi->installAcpiTable(acpi, table, info->fileSize, &key);
        if (s != efi::success)
        {
            return failed("installing a table", s);
        }
        say("table-boot: installed ");
        sayName(info->fileName);
        say("\n");
        boot().freePool(table);
    }
    dir->close(dir);
    return efi::success;
}

// The first line of \cmdline.txt as the UTF-16 load options.
efi::Status commandLine(efi::File* root, char16_t** options,
                        std::uint32_t* bytes)
{
    std::uint64_t size = 0;
    if (!sizeOf(root, u"cmdline.txt", &size))
    {
        return efi::errorBit | 14; // not found
    }
    std::uint8_t* text = nullptr;
    efi::Status s = readFile(root, u"\\cmdline.txt", size, &text);
    if (s != efi::success)
    {
        return s;
    }
    void* wide = nullptr;
    s = boot().allocatePool(efi::MemoryType::loaderData, 2 * (size + 1), &wide);
    if (s != efi::success)
    {
        return s;
    }
    auto* w = static_cast<char16_t*>(wide);
    std::uint64_t n = 0;
    for (; n < size && text[n] != '\n' && text[n] != '\r'; ++n)
    {
        w[n] = text[n];
    }
    w[n] = u'\0';
    *options = w;
    *bytes = static_cast<std::uint32_t>(2 * (n + 1));
    return efi::success;
}

efi::Status startKernel(efi::Handle self, efi::LoadedImage* image,
                        efi::File* root)
{
    char16_t* options = nullptr;
    std::uint32_t optionBytes = 0;
    efi::Status s = commandLine(root, &options, &optionBytes);
    if (s != efi::success)
    {
        return failed("reading \\cmdline.txt", s);
    }
    std::uint64_t size = 0;
    if (!sizeOf(root, u"vmlinuz", &size))
    {
        return failed("finding \\vmlinuz", efi::errorBit | 14);
    }
    std::uint8_t* kernel = nullptr;
    s = readFile(root, u"\\vmlinuz", size, &kernel);
    if (s != efi::success)
    {
        return failed("reading \\vmlinuz", s);
    }
    efi::Handle child = nullptr;
    s = boot().loadImage(false, self, nullptr, kernel, size, &child);
    if (s != efi::success)
    {
        return failed("loading \\vmlinuz", s);
    }
    efi::LoadedImage* loaded = nullptr;
    s = boot().handleProtocol(child, &efi::loadedImageGuid,
                              reinterpret_cast<void**>(&loaded));
    if (s != efi::success)
    {
        return failed("the kernel's loaded image", s);
    }
    // The stub finds `initrd=` files on its image's device.
    loaded->deviceHandle = image->deviceHandle;
    loaded->loadOptions = options;
    loaded->loadOptionsSize = optionBytes;
    say("table-boot: starting the kernel\n");
    s = boot().startImage(child, nullptr, nullptr);
    return failed("starting the kernel", s);
}

} // namespace

extern "C" efi::Status efi_main(efi::Handle self, efi::SystemTable* table)
{
    systemTable = table;
    efi::LoadedImage* image = nullptr;
    efi::Status s = boot().handleProtocol(self, &efi::loadedImageGuid,
                                          reinterpret_cast<void**>(&image));
    if (s != efi::success)
    {
        return failed("the loaded image protocol", s);
    }
    efi::SimpleFileSystem* volume = nullptr;
    s = boot().handleProtocol(image->deviceHandle, &efi::simpleFileSystemGuid,
                              reinterpret_cast<void**>(&volume));
    if (s != efi::success)
    {
        return failed("the boot volume", s);
    }
    efi::File* root = nullptr;
    s = volume->openVolume(volume, &root);
    if (s != efi::success)
    {
        return failed("opening the boot volume", s);
    }
    s = installTables(root);
    if (s != efi::success)
    {
        return s;
    }
    return startKernel(self, image, root);
}
