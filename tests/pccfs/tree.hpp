// SPDX-License-Identifier: Apache-2.0
// The static tree pccfs serves: directories, symbolic links and attribute
// files, numbered as FUSE inodes (the root is inode 1). Every file carries
// its role and the CPU or policy it belongs to; the tree never changes
// after it is built.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pccfs
{

// What an attribute file is. The acpi_cppc ones and the two current
// frequencies are PCC reads; setspeed and the two limits are PCC writes.
enum class Role
{
    // Per CPU, under cpuN/acpi_cppc.
    highestPerf,
    nominalPerf,
    lowestNonlinearPerf,
    lowestPerf,
    guaranteedPerf,
    referencePerf,
    lowestFreq,
    nominalFreq,
    feedbackCtrs,
    wraparoundTime,
    // Per CPU, under cpuN/power.
    resumeLatency,
    // Per policy, under cpufreq/policyM.
    affectedCpus,
    relatedCpus,
    scalingDriver,
    availableGovernors,
    governor,
    setspeed,
    cpuinfoMinFreq,
    cpuinfoMaxFreq,
    transitionLatency,
    scalingMinFreq,
    scalingMaxFreq,
    scalingCurFreq,
    cpuinfoCurFreq,
    // The rig's own, under pccfs.
    control,
    stats,
};

// Whether reading `role` is a PCC read (a doorbell of its own).
bool isPccRead(Role role) noexcept;
// Whether writing `role` is a PCC write (batched into a doorbell).
bool isPccWrite(Role role) noexcept;
// Whether `role` belongs to a policy (else to a CPU, or to the rig).
bool isPolicyRole(Role role) noexcept;

struct Node
{
    enum class Kind
    {
        directory,
        file,
        link,
    };
    Kind kind = Kind::directory;
    std::uint64_t parent = 1;
    unsigned mode = 0; // permission bits
    // Directories: name -> inode, in name order.
    std::map<std::string, std::uint64_t> children;
    std::string target;        // links
    Role role = Role::control; // files
    unsigned index = 0;        // files: the CPU or policy number
};

class Tree
{
  public:
    // The tree for `cpus` CPUs in policies of `cpusPerPolicy` (policyM is
    // named after its first CPU).
    Tree(unsigned cpus, unsigned cpusPerPolicy);

    // The node of inode `ino`, or nullptr.
    const Node* node(std::uint64_t ino) const noexcept;
    // The inode of `name` in directory `parent`, or 0.
    std::uint64_t child(std::uint64_t parent,
                        const std::string& name) const noexcept;

  private:
    std::uint64_t add(std::uint64_t parent, const std::string& name, Node node);
    std::uint64_t directory(std::uint64_t parent, const std::string& name);
    void file(std::uint64_t parent, const std::string& name, unsigned mode,
              Role role, unsigned index);

    std::vector<Node> nodes_; // inode n at n - 1
};

} // namespace pccfs
