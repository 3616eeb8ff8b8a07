// SPDX-License-Identifier: Apache-2.0
#include "pcc_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pccfs
{
namespace
{

// The tree never changes: the kernel may keep names and attributes.
constexpr double cacheSeconds = 3600.0;
// What sysfs reports as every attribute's size.
constexpr off_t attributeSize = 4096;

// An access to `node` on behalf of `req`.
Access access(fuse_req_t req, const Node& node)
{
    Access a;
    a.req = req;
    a.role = node.role;
    a.index = node.index;
    return a;
}

} // namespace

PccFs::PccFs(const Options& options) :
    tree_(options.cpus, options.cpusPerPolicy), engine_(options)
{
    (void)clock_gettime(CLOCK_REALTIME, &started_);
}

PccFs& PccFs::of(fuse_req_t req) noexcept
{
    return *static_cast<PccFs*>(fuse_req_userdata(req));
}

struct stat PccFs::attributes(std::uint64_t ino,
                              const Node& node) const noexcept
{
    struct stat st
    {};
    st.st_ino = ino;
    st.st_nlink = 1;
    st.st_atim = st.st_mtim = st.st_ctim = started_;
    switch (node.kind)
    {
        case Node::Kind::directory:
            st.st_mode = S_IFDIR | node.mode;
            st.st_nlink = 2;
            break;
        case Node::Kind::file:
            st.st_mode = S_IFREG | node.mode;
            st.st_size = attributeSize;
            break;
        case Node::Kind::link:
            st.st_mode = S_IFLNK | node.mode;
            st.st_size = static_cast<off_t>(node.target.size());
            break;
    }
    return st;
}

void PccFs::lookup(fuse_req_t req, fuse_ino_t parent, const char* name)
{
    PccFs& fs = of(req);
    const std::uint64_t ino = fs.tree_.child(parent, name);
    if (ino == 0)
    {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fuse_entry_param e{};
    e.ino = ino;
    e.attr = fs.attributes(ino, *fs.tree_.node(ino));
    e.attr_timeout = cacheSeconds;
    e.entry_timeout = cacheSeconds;
    fuse_reply_entry(req, &e);
}

void PccFs::getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/)
{
    PccFs& fs = of(req);
    const Node* node = fs.tree_.node(ino);
    if (node == nullptr)
    {
        fuse_reply_err(req, ENOENT);
        return;
    }
    const struct stat st = fs.attributes(ino, *node);
    fuse_reply_attr(req, &st, cacheSeconds);
}

void PccFs::setattr(fuse_req_t req, fuse_ino_t ino, struct stat* /*attr*/,
                    int toSet, fuse_file_info* fi)
{
    // Only the truncation of an open(O_TRUNC), which sysfs ignores.
    if ((toSet & ~FUSE_SET_ATTR_SIZE) != 0)
    {
        fuse_reply_err(req, EPERM);
        return;
    }
    getattr(req, ino, fi);
}

void PccFs::readlink(fuse_req_t req, fuse_ino_t ino)
{
    const Node* node = of(req).tree_.node(ino);
    if (node == nullptr || node->kind != Node::Kind::link)
    {
        fuse_reply_err(req, EINVAL);
        return;
    }
    fuse_reply_readlink(req, node->target.c_str());
}

void PccFs::opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi)
{
    const Node* node = of(req).tree_.node(ino);
    if (node == nullptr || node->kind != Node::Kind::directory)
    {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    fuse_reply_open(req, fi);
}

void PccFs::readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    fuse_file_info* /*fi*/)
{
    PccFs& fs = of(req);
    const Node* node = fs.tree_.node(ino);
    if (node == nullptr || node->kind != Node::Kind::directory)
    {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    std::vector<std::pair<std::string, std::uint64_t>> entries{
        {".", ino}, {"..", node->parent}};
    entries.insert(entries.end(), node->children.begin(), node->children.end());
    std::vector<char> buf(size);
    std::size_t used = 0;
    for (auto i = static_cast<std::size_t>(off); i < entries.size(); ++i)
    {
        const auto& [name, child] = entries[i];
        struct stat st
        {};
        st.st_ino = child;
        st.st_mode = fs.attributes(child, *fs.tree_.node(child)).st_mode;
        const std::size_t need =
            fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(),
                              &st, static_cast<off_t>(i + 1));
        if (need > size - used)
        {
            break;
        }
        used += need;
    }
    fuse_reply_buf(req, buf.data(), used);
}

void PccFs::open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi)
{
    const Node* node = of(req).tree_.node(ino);
    if (node == nullptr || node->kind != Node::Kind::file)
    {
        fuse_reply_err(req, node == nullptr ? ENOENT : EISDIR);
        return;
    }
    // As kernfs: opening for an access the file does not offer is EACCES.
    const int mode = fi->flags & O_ACCMODE;
    if (((mode == O_RDONLY || mode == O_RDWR) && (node->mode & 0444U) == 0) ||
        ((mode == O_WRONLY || mode == O_RDWR) && (node->mode & 0222U) == 0))
    {
        fuse_reply_err(req, EACCES);
        return;
    }
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->noflush = 1;
    PccFs& fs = of(req);
    fi->fh = ++fs.lastHandle_;
    fs.files_.emplace(fi->fh, std::make_unique<OpenFile>());
    if (fuse_reply_open(req, fi) != 0)
    {
        fs.files_.erase(fi->fh); // the opener is gone: no release follows
    }
}

void PccFs::read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 fuse_file_info* fi)
{
    PccFs& fs = of(req);
    const Node* node = fs.tree_.node(ino);
    Access a = access(req, *node);
    a.size = size;
    a.offset = off;
    a.file = fs.files_.at(fi->fh).get();
    fs.engine_.submit(std::move(a));
}

void PccFs::write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size,
                  off_t /*off*/, fuse_file_info* /*fi*/)
{
    PccFs& fs = of(req);
    const Node* node = fs.tree_.node(ino);
    Access a = access(req, *node);
    a.write = true;
    a.data.assign(buf, size);
    fs.engine_.submit(std::move(a));
}

void PccFs::flush(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* /*fi*/)
{
    fuse_reply_err(req, 0);
}

void PccFs::release(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi)
{
    of(req).files_.erase(fi->fh);
    fuse_reply_err(req, 0);
}

const fuse_lowlevel_ops& PccFs::operations() noexcept
{
    static const fuse_lowlevel_ops ops = [] {
        fuse_lowlevel_ops o{};
        o.lookup = &PccFs::lookup;
        o.getattr = &PccFs::getattr;
        o.setattr = &PccFs::setattr;
        o.readlink = &PccFs::readlink;
        o.opendir = &PccFs::opendir;
        o.readdir = &PccFs::readdir;
        o.open = &PccFs::open;
        o.read = &PccFs::read;
        o.write = &PccFs::write;
        o.flush = &PccFs::flush;
        o.release = &PccFs::release;
        return o;
    }();
    return ops;
}

} // namespace pccfs
