// SPDX-License-Identifier: Apache-2.0
// ReplacedFile: a file written under a temporary name beside its path and
// renamed over it once complete, so that the path holds either what was
// there before or the whole new file, never a part. Destroying it before
// commit() removes the temporary file.
#pragma once

#include <fstream>
#include <string>

namespace cppcgov::tools
{

class ReplacedFile
{
  public:
    // Creates the temporary file ("PATH.XXXXXX", mode 0666 less the
    // umask). Throws std::runtime_error naming `path` when it cannot be
    // written there ("cannot write '/x/t.json': Permission denied") or is
    // a directory.
    explicit ReplacedFile(std::string path);
    ~ReplacedFile();

    ReplacedFile(const ReplacedFile&) = delete;
    ReplacedFile& operator=(const ReplacedFile&) = delete;

    const std::string& path() const noexcept
    {
        return path_;
    }

    // Where to write the content.
    std::ofstream& stream() noexcept
    {
        return out_;
    }

    // Writes a whole content at once.
    void write(const std::string& content);

    // Flushes, closes and renames the file over path(). Throws
    // std::runtime_error naming path() when a write failed or the rename
    // does.
    void commit();

  private:
    std::string path_;
    std::string temporary_;
    std::ofstream out_;
    bool committed_ = false;
};

} // namespace cppcgov::tools
